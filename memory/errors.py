"""Errors of the manuals index, worded for the model or operator who must recover from them."""

from __future__ import annotations

from core.errors import PumpOpsError


class DocumentIndexError(PumpOpsError):
    """The manuals index could not be opened, searched or written."""


class EmptyIndexError(DocumentIndexError):
    """The manuals index holds no documents yet."""


class IndexLockedError(DocumentIndexError):
    """Another process holds the local (on-disk) index folder."""


class IndexUnavailableError(DocumentIndexError):
    """The Qdrant store failed or cannot be reached."""


class EmbeddingModelError(DocumentIndexError):
    """The sentence-transformers model could not be found or loaded."""


class InvalidSearchError(DocumentIndexError):
    """A search argument is outside what the index accepts."""
