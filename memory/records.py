"""The record stored for each manual chunk, declared once for Semantic Kernel's vector store abstraction."""

# No `from __future__ import annotations` here: SK reads the field metadata from real annotations.
from dataclasses import dataclass
from typing import Annotated

from semantic_kernel.data.vector import DistanceFunction, VectorStoreField, vectorstoremodel

from memory.embeddings import PACKAGED_DIMENSIONS


@vectorstoremodel
@dataclass
class ManualChunk:
    """One chunk of a manual: its text, where it comes from, and (on upsert) the text to embed.

    ``embedding`` holds the text to embed when written; the collection's embedding generator replaces it
    with the vector. Searches leave it ``None``.
    """

    id: Annotated[str, VectorStoreField("key")]
    text: Annotated[str, VectorStoreField("data")]
    document: Annotated[str, VectorStoreField("data", is_indexed=True)]
    title: Annotated[str, VectorStoreField("data")]
    section: Annotated[str, VectorStoreField("data")]
    section_path: Annotated[str, VectorStoreField("data")]
    source: Annotated[str, VectorStoreField("data", is_indexed=True)]
    position: Annotated[int, VectorStoreField("data")]
    embedding: Annotated[
        str | list[float] | None,
        VectorStoreField(
            "vector", type="float", dimensions=PACKAGED_DIMENSIONS, distance_function=DistanceFunction.COSINE_SIMILARITY
        ),
    ] = None
