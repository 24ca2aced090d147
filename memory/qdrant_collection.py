"""Semantic Kernel's Qdrant collection, fixed for current qdrant-client.

SK 1.45 searches with ``AsyncQdrantClient.search()``, which qdrant-client 1.16 removed, and passes a
single-comparison filter (a bare ``FieldCondition``) where Qdrant wants a ``Filter``. This subclass
runs vector search with ``query_points`` and wraps single conditions; everything else is SK's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from qdrant_client.models import FieldCondition, Filter, PointIdsList
from semantic_kernel.connectors.qdrant import QdrantCollection
from semantic_kernel.data.vector import KernelSearchResults, SearchType, VectorSearchOptions, VectorSearchResult
from semantic_kernel.exceptions import VectorSearchExecutionException, VectorStoreOperationException

TKey = TypeVar("TKey", bound=str | int)
TModel = TypeVar("TModel")


class PumpOpsQdrantCollection(QdrantCollection[TKey, TModel], Generic[TKey, TModel]):
    """`QdrantCollection` that searches with ``query_points`` and accepts single-comparison filters."""

    def _build_filter(self, search_filter: Callable | str | Sequence[Callable | str] | None) -> Any:
        built = super()._build_filter(search_filter)
        if isinstance(built, FieldCondition):
            return Filter(must=[built])
        return built

    async def _inner_search(
        self,
        search_type: SearchType,
        options: VectorSearchOptions,
        values: Any | None = None,
        vector: Sequence[float | int] | None = None,
        **kwargs: Any,
    ) -> KernelSearchResults[VectorSearchResult[TModel]]:
        if search_type != SearchType.VECTOR:
            # SK's keyword-hybrid path already uses query_points (its filter goes through _build_filter above).
            return await super()._inner_search(search_type, options, values=values, vector=vector, **kwargs)
        if not vector:
            vector = await self._generate_vector_from_values(values, options)
        if not vector:
            raise VectorSearchExecutionException("Search requires a vector.")
        vector_field = self.definition.try_get_vector_field(options.vector_property_name)
        if not vector_field:
            raise VectorStoreOperationException(
                f"Vector field {options.vector_property_name} not found in data model definition."
            )
        built = self._build_filter(options.filter)
        response = await self.qdrant_client.query_points(
            collection_name=self.collection_name,
            query=[float(x) for x in vector],
            using=(vector_field.storage_name or vector_field.name) if self.named_vectors else None,
            query_filter=Filter(must=built) if isinstance(built, list) else built,
            with_payload=True,
            with_vectors=options.include_vectors,
            limit=options.top,
            offset=options.skip,
            **kwargs,
        )
        points = response.points
        return KernelSearchResults(
            results=self._get_vector_search_results_from_results(points, options),
            total_count=len(points) if options.include_total_count else None,
        )

    async def count(self) -> int:
        """Exact number of points in the collection."""
        result = await self.qdrant_client.count(collection_name=self.collection_name, exact=True)
        return result.count

    async def existing_keys(self, keys: Sequence[TKey]) -> set[str]:
        """The subset of ``keys`` present in the collection, as strings (payloads and vectors not fetched)."""
        if not keys:
            return set()
        points = await self.qdrant_client.retrieve(
            collection_name=self.collection_name, ids=list(keys), with_payload=False, with_vectors=False
        )
        return {str(point.id) for point in points}

    async def set_payload_values(self, key: TKey, values: dict[str, Any]) -> None:
        """Change some payload fields of one point, keeping its vector (no re-embedding)."""
        await self.qdrant_client.set_payload(
            collection_name=self.collection_name, payload=values, points=PointIdsList(points=[key])
        )
