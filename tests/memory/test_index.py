import asyncio
import os
import socket
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from semantic_kernel.connectors.qdrant import QdrantCollection

from memory import (
    DocumentIndex,
    Embedder,
    EmbeddingConfig,
    EmbeddingModelError,
    EmptyIndexError,
    IndexConfig,
    IndexLockedError,
    IndexUnavailableError,
    IngestManifest,
    InvalidSearchError,
    ingest,
)
from memory.qdrant_collection import PumpOpsQdrantCollection
from memory.records import ManualChunk
from tests.memory.support import CachingEmbedder

LOTO = "A colleague went home and left his lock on, can the supervisor remove it?"


async def test_an_empty_index_says_to_run_pumpops_ingest(memory_index: DocumentIndex) -> None:
    with pytest.raises(EmptyIndexError, match="pumpops ingest"):
        await memory_index.search("bearing temperature alarm")
    assert await memory_index.count() == 0


async def test_search_returns_cited_passages_best_first(memory_index: DocumentIndex, manifest: IngestManifest) -> None:
    await ingest(None, memory_index, manifest)
    hits = await memory_index.search(LOTO, 5)
    assert len(hits) == 5
    assert (hits[0].document, hits[0].section) == ("lockout-tagout", "Removing a Lock When the Owner Is Absent")
    assert all(0.0 < h.score <= 1.0 and h.title and h.section_path.startswith(h.title) for h in hits)
    assert hits[0].source.startswith("pumpops:corpus/")


async def test_a_document_filter_of_one_comparison_works_in_both_search_modes(
    memory_index: DocumentIndex, manifest: IngestManifest
) -> None:
    await ingest(None, memory_index, manifest)
    for hybrid in (True, False):
        hits = await memory_index.search("grease interval", 3, document="om-aquaflow-af-150", hybrid=hybrid)
        assert len(hits) == 3 and {h.document for h in hits} == {"om-aquaflow-af-150"}


async def test_vector_search_runs_through_sk_on_current_qdrant_client(
    memory_index: DocumentIndex, manifest: IngestManifest, embedder: CachingEmbedder
) -> None:
    # SK 1.45's QdrantCollection calls AsyncQdrantClient.search(), gone from current clients; ours uses query_points.
    assert issubclass(PumpOpsQdrantCollection, QdrantCollection) and not hasattr(AsyncQdrantClient, "search")
    await ingest(None, memory_index, manifest)
    vector = (await embedder.embed([LOTO]))[0].tolist()
    async with memory_index._connection.lease() as client:
        collection = PumpOpsQdrantCollection[str, ManualChunk](  # type: ignore[call-arg]  # as memory/index.py
            record_type=ManualChunk, collection_name="manuals", client=client
        )
        results = await collection.search(vector=vector, top=3, filter="lambda c: c.document == 'lockout-tagout'")
        records = [r.record async for r in results.results]
    assert len(records) == 3 and {r.document for r in records} == {"lockout-tagout"}


async def test_bad_search_arguments_are_refused_with_a_recovery_message(memory_index: DocumentIndex) -> None:
    with pytest.raises(InvalidSearchError, match="empty"):
        await memory_index.search("   ")
    with pytest.raises(InvalidSearchError, match="top_k=0"):
        await memory_index.search("seal leak", 0)


async def test_a_folder_index_keeps_its_data_across_close_and_reopen(
    embedder: CachingEmbedder, manifest: IngestManifest, tmp_path: Path
) -> None:
    config = IndexConfig(path=str(tmp_path / "qdrant"))
    async with DocumentIndex(config, embedder) as index:
        report = await ingest(None, index, manifest)
        before = [(h.chunk_id, h.score) for h in await index.search(LOTO, 4)]
    assert not (tmp_path / "qdrant" / "pumpops-owner.json").exists()
    async with DocumentIndex(config, embedder) as reopened:
        assert await reopened.count() == report.chunks_added
        assert [(h.chunk_id, h.score) for h in await reopened.search(LOTO, 4)] == before
        again = await ingest(None, reopened, manifest)
        assert again.chunks_added == 0


async def test_a_second_process_is_told_who_holds_the_folder_and_that_a_server_url_shares_it(
    embedder: CachingEmbedder, manifest: IngestManifest, tmp_path: Path
) -> None:
    config = IndexConfig(path=str(tmp_path / "qdrant"), idle_release_seconds=600)
    async with DocumentIndex(config, embedder) as holder:
        await ingest(None, holder, manifest)
        async with DocumentIndex(config, embedder) as other:
            with pytest.raises(IndexLockedError) as caught:
                await other.search(LOTO)
    message = str(caught.value)
    assert f"process {os.getpid()} (" in message
    assert "Qdrant.Url" in message and "share" in message
    assert str(tmp_path) not in message


async def test_an_idle_folder_index_lets_go_of_its_lock_and_reopens_on_use(
    embedder: CachingEmbedder, manifest: IngestManifest, tmp_path: Path
) -> None:
    config = IndexConfig(path=str(tmp_path / "qdrant"), idle_release_seconds=0.01)
    async with DocumentIndex(config, embedder) as index:
        await ingest(None, index, manifest)
        for _ in range(500):  # bounded wait for the idle timer
            if not index.is_open:
                break
            await asyncio.sleep(0.01)
        assert not index.is_open
        async with DocumentIndex(config, embedder) as other:  # another user can take its turn
            assert await other.count() > 0
        assert (await index.search(LOTO, 1))[0].text


def test_the_embedder_loads_nothing_until_used_and_refuses_hub_names(tmp_path: Path) -> None:
    assert not Embedder().loaded
    with pytest.raises(EmbeddingModelError, match="packaged"):
        Embedder(EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2")).load()
    with pytest.raises(EmbeddingModelError, match="never downloaded"):
        Embedder(EmbeddingConfig(model=str(tmp_path))).load()


async def test_an_unreachable_server_url_is_reported_with_what_to_check(embedder: CachingEmbedder) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with DocumentIndex(IndexConfig(url=f"http://127.0.0.1:{port}", api_key=None), embedder) as index:
        with pytest.raises(IndexUnavailableError, match=r"Qdrant\.Url"):
            await index.count()
