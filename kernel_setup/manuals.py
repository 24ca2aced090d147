"""The manuals index from settings: `Qdrant.*` and `Embeddings.Model` turned into the memory package's configs.

The memory package takes plain parameters and never reads settings; this is the one translation.
"""

from __future__ import annotations

from kernel_setup.settings import Settings
from memory import DocumentIndex, Embedder, EmbeddingConfig, IndexConfig
from memory.config import IN_MEMORY, PACKAGED_MODEL


def index_config(settings: Settings) -> IndexConfig:
    """Qdrant settings as an `IndexConfig`.

    A server when ``Qdrant.Url`` is set, else the local path (``:memory:`` kept as is, other paths
    resolved against the settings file's folder).
    """
    qdrant = settings.qdrant
    path = qdrant.path if qdrant.path == IN_MEMORY else str(settings.resolve(qdrant.path))
    api_key = qdrant.api_key.get_secret_value() if qdrant.api_key is not None else None
    return IndexConfig(path=path, url=qdrant.url or None, api_key=api_key, collection=qdrant.collection)


def embedding_config(settings: Settings) -> EmbeddingConfig:
    """``Embeddings.Model``: ``packaged`` or a model folder (resolved against the settings file's folder)."""
    model = settings.embeddings.model
    return EmbeddingConfig(model=model if model == PACKAGED_MODEL else str(settings.resolve(model)))


def document_index(settings: Settings, embedder: Embedder | None = None) -> DocumentIndex:
    """A manuals index for these settings; it opens Qdrant and loads the model only when first used."""
    return DocumentIndex(index_config(settings), embedder or Embedder(embedding_config(settings)))
