"""The manuals index: chunks of the maintenance manuals in a Qdrant collection, searched by meaning and keywords.

Writes and reads go through Semantic Kernel's vector store abstraction (`PumpOpsQdrantCollection` over
the `ManualChunk` record, with `SentenceTransformerEmbeddings` as its embedding generator).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from semantic_kernel.exceptions import KernelException

from core.errors import sentence
from memory.chunking import Chunk
from memory.config import IndexConfig, StoreMode
from memory.embeddings import Embedder, SentenceTransformerEmbeddings
from memory.errors import DocumentIndexError, EmptyIndexError, IndexUnavailableError, InvalidSearchError
from memory.keywords import bm25_scores, fuse
from memory.qdrant_collection import PumpOpsQdrantCollection
from memory.records import ManualChunk
from memory.store import QdrantConnection

MAX_TOP_K = 50
UPSERT_BATCH = 128
# Hybrid search reranks this many nearest chunks by keywords (see memory.keywords).
CANDIDATE_POOL = 50
_STORE_ERRORS = (KernelException, ResponseHandlingException, UnexpectedResponse, httpx.HTTPError, OSError, ValueError)

Collection = PumpOpsQdrantCollection[str, ManualChunk]


@dataclass(frozen=True)
class SearchHit:
    """One passage found: where it is from, how similar it is to the question, and its text."""

    chunk_id: str
    document: str
    title: str
    section: str
    section_path: str
    source: str
    position: int
    score: float
    text: str


class DocumentIndex:
    """The manuals collection. Opens its store on first use; `close` (or ``async with``) releases it."""

    def __init__(self, config: IndexConfig, embedder: Embedder) -> None:
        self.config = config
        self.embedder = embedder
        self._connection = QdrantConnection(config)
        self._generator = SentenceTransformerEmbeddings(embedder)
        self._ready = False

    async def __aenter__(self) -> DocumentIndex:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the store (on disk: free the folder for other processes)."""
        await self._connection.close()

    async def release(self) -> None:
        """Close the store now if idle; the next operation reopens it."""
        await self._connection.release()
        self._ready = False

    @property
    def is_open(self) -> bool:
        """True while the store is open (on disk: while this process holds the folder lock)."""
        return self._connection.is_open

    async def search(
        self, question: str, top_k: int = 4, *, document: str | None = None, hybrid: bool = True
    ) -> list[SearchHit]:
        """The ``top_k`` passages that best answer ``question``, best first.

        Args:
            question: The question in plain words.
            top_k: How many passages, 1 to `MAX_TOP_K`.
            document: Only passages of this document (its short name, e.g. ``"bearing-failure"``).
            hybrid: Rerank the `CANDIDATE_POOL` best by meaning with keywords (BM25), fusing both rankings
                (reciprocal rank fusion); False ranks by meaning only.

        Returns:
            Hits whose ``score`` is the cosine similarity of passage and question (0 to 1, higher is closer).

        Raises:
            InvalidSearchError: an empty question or ``top_k`` out of range.
            EmptyIndexError: nothing has been ingested yet.
            IndexLockedError: local mode and another process holds the index folder.
            IndexUnavailableError: the store failed.
        """
        question = question.strip()
        if not question:
            raise InvalidSearchError("The question is empty. Ask in plain words, e.g. 'how to align a pump coupling'.")
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidSearchError(f"top_k={top_k!r} is out of range; use 1 to {MAX_TOP_K}.")
        query = (await self.embedder.embed([question]))[0].tolist()
        search_filter = None if document is None else f"lambda chunk: chunk.document == {document!r}"
        candidates = max(CANDIDATE_POOL, top_k) if hybrid else top_k
        async with self._collection(create=False) as collection:
            try:
                results = await collection.search(vector=query, top=candidates, filter=search_filter)
                found = [(item.record, item.score or 0.0) async for item in results.results]
            except _STORE_ERRORS as exc:
                raise IndexUnavailableError(f"Searching the manuals index failed: {exc}") from exc
            if not found and await collection.count() == 0:
                raise _empty()
        if hybrid:
            keyword = bm25_scores(question, [f"{record.section_path}\n{record.text}" for record, _ in found])
            found = [found[i] for i in fuse(len(found), keyword)]
        return [_hit(record, score) for record, score in found[:top_k]]

    async def count(self) -> int:
        """Chunks in the index (0 when nothing was ingested)."""
        try:
            async with self._collection(create=False) as collection:
                return await collection.count()
        except EmptyIndexError:
            return 0

    async def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored."""
        async with self._collection(create=True) as collection:
            try:
                return await collection.existing_keys(list(ids))
            except _STORE_ERRORS as exc:
                raise IndexUnavailableError(f"Reading the manuals index failed: {exc}") from exc

    async def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Embed and store ``chunks`` (in batches; an existing id is overwritten)."""
        async with self._collection(create=True) as collection:
            for start in range(0, len(chunks), UPSERT_BATCH):
                batch = [_record(chunk) for chunk in chunks[start : start + UPSERT_BATCH]]
                try:
                    await collection.upsert(batch)
                except _STORE_ERRORS as exc:
                    raise IndexUnavailableError(f"Writing to the manuals index failed: {exc}") from exc

    async def upsert_vectors(self, chunks: Sequence[Chunk], vectors: Sequence[Sequence[float]]) -> None:
        """Store ``chunks`` with vectors computed elsewhere (bulk loads, benchmarks); no model is used."""
        if len(chunks) != len(vectors):
            raise InvalidSearchError(f"{len(chunks)} chunks but {len(vectors)} vectors; give one vector per chunk.")
        async with self._collection(create=True, embed=False) as collection:
            for start in range(0, len(chunks), UPSERT_BATCH):
                batch = [
                    _record(chunk, [float(x) for x in vector])
                    for chunk, vector in zip(
                        chunks[start : start + UPSERT_BATCH], vectors[start : start + UPSERT_BATCH], strict=True
                    )
                ]
                try:
                    await collection.upsert(batch)
                except _STORE_ERRORS as exc:
                    raise IndexUnavailableError(f"Writing to the manuals index failed: {exc}") from exc

    async def set_positions(self, positions: dict[str, int]) -> None:
        """Move stored chunks to new positions in their document without re-embedding them."""
        async with self._collection(create=True) as collection:
            try:
                for chunk_id, position in positions.items():
                    await collection.set_payload_values(chunk_id, {"position": position})
            except _STORE_ERRORS as exc:
                raise IndexUnavailableError(f"Writing to the manuals index failed: {exc}") from exc

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove chunks by id (unknown ids are ignored)."""
        if not ids:
            return
        async with self._collection(create=True) as collection:
            try:
                await collection.delete(list(ids))
            except _STORE_ERRORS as exc:
                raise IndexUnavailableError(f"Deleting from the manuals index failed: {exc}") from exc

    @asynccontextmanager
    async def _collection(self, *, create: bool, embed: bool = True) -> AsyncIterator[Collection]:
        """The collection over a leased client; created on demand for writes, EmptyIndexError for reads.

        With ``embed`` the collection embeds record text itself (SK's embedding generator); without, records
        must carry their vectors.
        """
        async with self._connection.lease() as client:
            # SK's decorators hide QdrantCollection's signature from the type checker.
            collection: Collection = PumpOpsQdrantCollection(  # type: ignore[call-arg]
                record_type=ManualChunk,
                collection_name=self.config.collection,
                embedding_generator=self._generator if embed else None,
                client=client,
            )
            if not self._ready:
                try:
                    exists = await collection.collection_exists()
                    if not exists and create:
                        await collection.ensure_collection_exists()
                except _STORE_ERRORS as exc:
                    raise IndexUnavailableError(
                        f"Cannot open the manuals collection: {sentence(str(exc))}{_where(self.config)}"
                    ) from exc
                if not exists and not create:
                    raise _empty()
                self._ready = True
            yield collection


def _where(config: IndexConfig) -> str:
    if config.mode is StoreMode.SERVER:
        return (
            " Check that the Qdrant server at Qdrant.Url is running and reachable, or unset Qdrant.Url to use a folder."
        )
    return ""


def _empty() -> EmptyIndexError:
    return EmptyIndexError(
        "The manuals index is empty: no documents have been ingested. An administrator must run `pumpops ingest` "
        "(it indexes the shipped maintenance manuals); until then, answer from the asset, alarm and sensor tools "
        "and say that the manuals are not available."
    )


def _record(chunk: Chunk, vector: list[float] | None = None) -> ManualChunk:
    return ManualChunk(
        id=chunk.id,
        text=chunk.text,
        document=chunk.document,
        title=chunk.title,
        section=chunk.section,
        section_path=chunk.section_path,
        source=chunk.source,
        position=chunk.position,
        embedding=chunk.embedding_text if vector is None else vector,
    )


def _hit(record: ManualChunk, score: float) -> SearchHit:
    return SearchHit(
        chunk_id=str(record.id),
        document=record.document,
        title=record.title,
        section=record.section,
        section_path=record.section_path,
        source=record.source,
        position=int(record.position),
        score=round(float(score), 4),
        text=record.text,
    )


__all__ = ["DocumentIndex", "DocumentIndexError", "SearchHit"]
