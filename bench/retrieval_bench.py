"""Retrieval quality bench: recall@1, recall@5 and MRR on the labeled questions, three retrievers side by side.

- hybrid: what ``docs.search_documentation`` uses: MiniLM vectors and BM25 keyword vectors in Qdrant, fused by
  reciprocal rank;
- dense: Qdrant vector search with MiniLM alone;
- bm25: the baseline, rank-bm25 (BM25Okapi) over the same chunks and the same tokenizer, outside Qdrant.

All three rank the same chunks of the shipped corpus (``memory/corpus``) for the 72 questions of
``memory/eval/retrieval_questions.json``; a hit is a chunk of the labeled document and section.

Run:   .venv/bin/python bench/retrieval_bench.py
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from rank_bm25 import BM25Okapi

from memory import DocumentIndex, Embedder, IndexConfig, IngestManifest, chunk_markdown, corpus_files, ingest
from memory.corpus import retrieval_questions, source_name
from memory.evaluation import RetrievalScores, evaluate_index, first_relevant_rank, score_ranks
from memory.keywords import terms
from storage import open_database


def bm25_scores(depth: int) -> RetrievalScores:
    chunks = [
        chunk
        for path in corpus_files()
        for chunk in chunk_markdown(path.read_text("utf-8"), source=source_name(path), document=path.stem)
    ]
    bm25 = BM25Okapi([terms(chunk.embedding_text) for chunk in chunks])
    ranks = []
    for question in retrieval_questions():
        scores = bm25.get_scores(terms(question.question))
        order = sorted(range(len(chunks)), key=lambda i: -scores[i])[:depth]
        ranks.append(first_relevant_rank(question, [(chunks[i].document, chunks[i].section) for i in order]))
    return score_ranks(ranks)


async def main(depth: int) -> None:
    questions = retrieval_questions()
    with tempfile.TemporaryDirectory() as tmp:
        db = await open_database(Path(tmp) / "bench.db")
        try:
            async with DocumentIndex(IndexConfig(path=":memory:"), Embedder()) as index:
                started = time.perf_counter()
                report = await ingest(None, index, IngestManifest(db, "manuals"))
                print(
                    f"corpus: {report.documents} documents, {report.chunks_added} chunks, ingested in "
                    f"{time.perf_counter() - started:.1f} s; {len(questions)} labeled questions\n"
                )
                rows = {
                    "hybrid (docs.search)": await evaluate_index(index, questions, depth=depth, hybrid=True),
                    "dense (Qdrant vector)": await evaluate_index(index, questions, depth=depth, hybrid=False),
                }
        finally:
            await db.close()
    rows["bm25 baseline (rank-bm25)"] = bm25_scores(depth)
    print(f"{'retriever':<28}{'recall@1':>10}{'recall@5':>10}{'MRR@' + str(depth):>10}")
    for name, scores in rows.items():
        print(f"{name:<28}{scores.recall_at_1:>10.3f}{scores.recall_at_5:>10.3f}{scores.mrr:>10.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, default=10, help="Results considered per question (MRR cut-off).")
    asyncio.run(main(parser.parse_args().depth))
