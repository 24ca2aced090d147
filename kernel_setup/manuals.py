"""The manuals index from settings: `Qdrant.*` and `Embeddings.Model` turned into the memory package's configs.

The memory package takes plain parameters and never reads settings; this is the one translation.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from kernel_setup.settings import Settings
from memory import DocumentIndex, Embedder, EmbeddingConfig, IndexConfig
from memory.config import IN_MEMORY, PACKAGED_MODEL


def index_config(settings: Settings) -> IndexConfig:
    """Qdrant settings as an `IndexConfig`.

    A server when ``Qdrant.Url`` is set, else the local path (``:memory:`` kept as is, other paths
    resolved against the settings file's folder). The collection is the embedding model's
    (`collection_name`): vectors of two models never share one.
    """
    qdrant = settings.qdrant
    path = qdrant.path if qdrant.path == IN_MEMORY else str(settings.resolve(qdrant.path))
    api_key = qdrant.api_key.get_secret_value() if qdrant.api_key is not None else None
    collection = collection_name(qdrant.collection, embedding_config(settings).model)
    return IndexConfig(path=path, url=qdrant.url or None, api_key=api_key, collection=collection)


def collection_name(collection: str, model: str) -> str:
    """``Qdrant.Collection`` for the packaged model; ``<collection>--<folder>-<8 hex>`` for a model folder.

    Chunk ids depend only on the text, so a collection filled by one model would look up to date to
    another and answer searches with vectors it cannot compare. Each model therefore gets its own
    collection: after ``Embeddings.Model`` changes, search reports an empty index until ``pumpops
    ingest`` has filled the new one, and the old one is kept for switching back. The digits are of
    the folder's resolved path; a model replaced in place in the same folder is not detected.
    """
    if model == PACKAGED_MODEL:
        return collection
    folder = Path(model)
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", folder.name).strip("-")[:40] or "model"
    digest = hashlib.sha256(str(folder).encode("utf-8")).hexdigest()[:8]
    return f"{collection[:200]}--{slug}-{digest}"


def embedding_config(settings: Settings) -> EmbeddingConfig:
    """``Embeddings.Model``: ``packaged`` or a model folder (resolved against the settings file's folder)."""
    model = settings.embeddings.model
    return EmbeddingConfig(model=model if model == PACKAGED_MODEL else str(settings.resolve(model)))


def document_index(settings: Settings, embedder: Embedder | None = None) -> DocumentIndex:
    """A manuals index for these settings; it opens Qdrant and loads the model only when first used."""
    return DocumentIndex(index_config(settings), embedder or Embedder(embedding_config(settings)))
