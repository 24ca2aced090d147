"""The ingest manifest: which chunk ids each source put in which collection (SQLite, migration 2).

It makes re-ingest exact: unchanged chunks are skipped and an edited source's stale chunks are deleted
by id, without scanning the vector store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from storage import Database


class IngestManifest:
    """Chunk ids per source for one collection."""

    def __init__(self, db: Database, collection: str) -> None:
        self._db = db
        self.collection = collection

    async def chunks(self, source: str) -> dict[str, int]:
        """The chunk ids recorded for ``source``, with their positions."""
        rows = await self._db.fetch_all(
            "SELECT chunk_id, position FROM ingest_manifest WHERE collection = ? AND source = ?",
            (self.collection, source),
        )
        return {row["chunk_id"]: row["position"] for row in rows}

    async def sources(self) -> list[str]:
        """Every source with chunks recorded, sorted."""
        rows = await self._db.fetch_all(
            "SELECT DISTINCT source FROM ingest_manifest WHERE collection = ? ORDER BY source", (self.collection,)
        )
        return [row["source"] for row in rows]

    async def replace(self, source: str, chunks: Sequence[tuple[str, int]]) -> None:
        """Record exactly ``chunks`` (id, position) for ``source``, in one transaction."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM ingest_manifest WHERE collection = ? AND source = ?", (self.collection, source)
            )
            await conn.executemany(
                "INSERT INTO ingest_manifest (collection, source, chunk_id, position, ingested_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(self.collection, source, chunk_id, position, now) for chunk_id, position in chunks],
            )
