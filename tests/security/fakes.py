"""A deterministic stand-in for the embedding model, where speed matters and retrieval quality is not the point."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memory import Embedder
from memory.embeddings import PACKAGED_DIMENSIONS

_WORD = re.compile(r"\w+")


class HashEmbedder(Embedder):
    """Bag-of-words vectors: each word hashed to a dimension; unit length; no model is loaded."""

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), PACKAGED_DIMENSIONS), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()) or ["empty"]:
                digest = hashlib.blake2b(word.encode("utf-8", "replace"), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "big") % PACKAGED_DIMENSIONS] += 1.0
            vectors[row] /= np.linalg.norm(vectors[row])
        return vectors
