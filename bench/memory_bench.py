"""Manuals index bench: ingestion throughput against raw encoding, search latency, peak memory.

1. Ingestion: the shipped corpus's chunks are encoded raw (``Embedder.encode``, the model already warm),
   then ingested into a fresh index (chunking, SK embedding generator, Qdrant upsert, manifest); prints
   both rates in chunks/s and their ratio (target >= 0.8x).
2. Search latency of ``DocumentIndex.search`` (hybrid; query encoding included), p50/p95 over the labeled
   questions, at the corpus size and after growing the collection to ``--synthetic`` chunks (default
   20,000) of synthetic text with vectors near the real ones (target p50 < 50 ms). The encode share is
   printed beside it.
3. Peak memory: process peak RSS after imports, after the model loads, and after ingestion.

Local mode (a temp folder) by default; ``--memory`` for ':memory:'. Figures only, not a test.

Run:   .venv/bin/python bench/memory_bench.py
Smoke: .venv/bin/python bench/memory_bench.py --synthetic 2000 --repeat 1
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from memory import Chunk, DocumentIndex, Embedder, IndexConfig, IngestManifest, chunk_markdown, corpus_files, ingest
from memory.corpus import retrieval_questions, source_name
from storage import open_database


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def corpus_chunks() -> list[Chunk]:
    return [
        chunk
        for path in corpus_files()
        for chunk in chunk_markdown(path.read_text("utf-8"), source=source_name(path), document=path.stem)
    ]


def synthetic_chunks(
    count: int, real: list[Chunk], real_vectors: np.ndarray, seed: int
) -> tuple[list[Chunk], np.ndarray]:
    """Chunks of shuffled corpus words, each with a real chunk's vector plus noise (vectors cluster like real ones)."""
    rng = random.Random(seed)
    words = " ".join(chunk.text for chunk in real).split()
    chunks, picks = [], []
    for i in range(count):
        pick = rng.randrange(len(real))
        picks.append(pick)
        text = " ".join(rng.choice(words) for _ in range(rng.randint(60, 140)))
        chunks.append(
            Chunk(
                id=f"00000000-0000-4000-8000-{i:012d}",
                source=f"synthetic:{i // 20}",
                document=f"synthetic-{i // 20}",
                title=f"Synthetic manual {i // 20}",
                section=f"Section {i % 20}",
                section_path=f"Synthetic manual {i // 20} > Section {i % 20}",
                position=i % 20,
                text=text,
            )
        )
    noise = np.random.default_rng(seed).normal(scale=0.04, size=(count, real_vectors.shape[1])).astype(np.float32)
    vectors = real_vectors[picks] + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors


async def latencies(index: DocumentIndex, embedder: Embedder, questions: list[str], repeat: int) -> dict[str, float]:
    total, encode = [], []
    for _ in range(repeat):
        for question in questions:
            started = time.perf_counter()
            await embedder.embed([question])
            encode.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await index.search(question, 4)
            total.append((time.perf_counter() - started) * 1000)
    return {
        "p50": statistics.median(total),
        "p95": percentile(total, 0.95),
        "encode_p50": statistics.median(encode),
    }


async def main(args: argparse.Namespace) -> None:
    print(f"python {platform.python_version()} on {platform.machine()}, {platform.processor() or 'cpu'}")
    rss_imports = peak_rss_mib()
    embedder = Embedder()
    chunks = corpus_chunks()
    texts = [chunk.embedding_text for chunk in chunks]
    embedder.encode(texts[:8])  # load and warm the model
    rss_model = peak_rss_mib()

    started = time.perf_counter()
    real_vectors = embedder.encode(texts)
    raw_seconds = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        path = ":memory:" if args.memory else str(Path(tmp) / "qdrant")
        db = await open_database(Path(tmp) / "bench.db")
        try:
            async with DocumentIndex(IndexConfig(path=path, idle_release_seconds=3600), embedder) as index:
                report = await ingest(None, index, IngestManifest(db, "manuals"))
                rss_ingest = peak_rss_mib()
                raw_rate = len(chunks) / raw_seconds
                ingest_rate = report.chunks_added / report.seconds
                print(f"\nstore: {'memory' if args.memory else 'local folder'}; corpus: {len(chunks)} chunks")
                print("ingestion (chunks/s)")
                print(f"  raw encode      {raw_rate:8.1f}   ({raw_seconds:.2f} s)")
                print(
                    f"  pumpops ingest  {ingest_rate:8.1f}   ({report.seconds:.2f} s)   "
                    f"ratio {ingest_rate / raw_rate:.2f}x (target >= 0.8x)"
                )

                questions = [q.question for q in retrieval_questions()]
                print("\nsearch latency, ms (hybrid; query encoding included)")
                for label, size in (("corpus", len(chunks)), ("synthetic", args.synthetic)):
                    if label == "synthetic":
                        extra, vectors = synthetic_chunks(size - len(chunks), chunks, real_vectors, args.seed)
                        started = time.perf_counter()
                        await index.upsert_vectors(extra, vectors.tolist())
                        print(f"  (grew to {await index.count():,} chunks in {time.perf_counter() - started:.1f} s)")
                    stats = await latencies(index, embedder, questions, args.repeat)
                    print(
                        f"  {await index.count():>7,} chunks   p50 {stats['p50']:6.1f}   p95 {stats['p95']:6.1f}   "
                        f"(query encode p50 {stats['encode_p50']:.1f})   target p50 < 50"
                    )
        finally:
            await db.close()
    print("\npeak RSS, MiB")
    print(
        f"  after imports {rss_imports:7.0f}   model loaded {rss_model:7.0f}   after ingestion {rss_ingest:7.0f}   "
        f"(ingestion adds {rss_ingest - rss_model:.0f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--synthetic", type=int, default=20_000, help="Collection size for the second latency run.")
    parser.add_argument("--repeat", type=int, default=3, help="Passes over the 72 questions per latency run.")
    parser.add_argument("--memory", action="store_true", help="Use ':memory:' instead of a local folder.")
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(main(parser.parse_args()))
