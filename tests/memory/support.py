"""Test support: one real embedding model for the whole test session, with a memo of what it encoded.

The vectors are the real model's; the memo only spares re-encoding the same corpus in every test.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from memory import Embedder

# The contract of `pumpops ingest --json` (and `IngestReport.to_dict`).
REPORT_KEYS = {
    "documents",
    "documents_removed",
    "chunks_added",
    "chunks_updated",
    "chunks_removed",
    "skipped",
    "seconds",
}


class CachingEmbedder(Embedder):
    """The real `Embedder`, remembering each text's vector."""

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[str, np.ndarray] = {}
        self._memo_lock = threading.Lock()
        self.encoded_texts = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._memo_lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        if missing:
            vectors = super().encode(missing)
            with self._memo_lock:
                self._memo.update(zip(missing, vectors, strict=True))
                self.encoded_texts += len(missing)
        with self._memo_lock:
            return np.stack([self._memo[t] for t in texts]) if texts else super().encode([])


@functools.cache
def shared_embedder() -> CachingEmbedder:
    """The session's embedder (the model loads on first encode)."""
    return CachingEmbedder()
