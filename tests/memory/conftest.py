from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import DocumentIndex, IndexConfig, IngestManifest
from storage import Database, open_database
from tests.memory.support import CachingEmbedder, shared_embedder


@pytest.fixture(scope="session")
def embedder() -> CachingEmbedder:
    return shared_embedder()


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    db = await open_database(tmp_path / "pumpops.db")
    yield db
    await db.close()


@pytest.fixture
def manifest(database: Database) -> IngestManifest:
    return IngestManifest(database, "manuals")


@pytest.fixture
async def memory_index(embedder: CachingEmbedder) -> AsyncIterator[DocumentIndex]:
    index = DocumentIndex(IndexConfig(path=":memory:"), embedder)
    yield index
    await index.close()


@pytest.fixture
async def disk_index(embedder: CachingEmbedder, tmp_path: Path) -> AsyncIterator[DocumentIndex]:
    index = DocumentIndex(IndexConfig(path=str(tmp_path / "qdrant")), embedder)
    yield index
    await index.close()
