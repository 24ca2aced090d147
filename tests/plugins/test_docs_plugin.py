"""The docs plugin through `kernel.invoke`, with the real embedding model, on ':memory:' and on a folder."""

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_calling_utils import kernel_function_metadata_to_function_call_format
from semantic_kernel.filters.filter_types import FilterTypes
from semantic_kernel.functions import KernelArguments

from core.errors import PumpOpsError
from kernel_setup.filters import validate_arguments
from memory import DocumentIndex, IndexConfig, IngestManifest, ingest
from plugins.declarations import Effect, traits_of
from plugins.docs import MAX_TOP_K, MIN_TOP_K, DocsPlugin
from storage import Database, open_database
from tests.memory.support import CachingEmbedder, shared_embedder

SNAPSHOT = Path(__file__).parent / "snapshots" / "docs.json"
LOTO = "A colleague went home and left his lock on, can the supervisor remove it?"


@pytest.fixture(scope="session")
def docs_embedder() -> CachingEmbedder:
    return shared_embedder()


@pytest.fixture
async def registry(tmp_path: Path) -> AsyncIterator[Database]:
    db = await open_database(tmp_path / "pumpops.db")
    yield db
    await db.close()


def docs_kernel(index: DocumentIndex) -> Kernel:
    kernel = Kernel()
    kernel.add_plugin(DocsPlugin(index), plugin_name="docs")
    return kernel


async def search(kernel: Kernel, **arguments: Any) -> Any:
    function = kernel.get_function("docs", "search_documentation")
    result = await kernel.invoke(function, KernelArguments(**arguments))
    assert result is not None
    return json.loads(str(result.value))


def pumpops_cause(exc: BaseException) -> PumpOpsError:
    current: BaseException | None = exc
    while current is not None:
        if isinstance(current, PumpOpsError):
            return current
        current = current.__cause__ or current.__context__
    raise AssertionError(f"no PumpOpsError behind {exc!r}")


async def test_search_documentation_returns_cited_passages_from_memory_qdrant(
    docs_embedder: CachingEmbedder, registry: Database
) -> None:
    async with DocumentIndex(IndexConfig(path=":memory:"), docs_embedder) as index:
        await ingest(None, index, IngestManifest(registry, "manuals"))
        result = await search(docs_kernel(index), question=LOTO)
    assert result["question"] == LOTO and result["count"] == len(result["hits"]) == 4
    assert {"title", "section", "chunk_id", "document", "score", "text", "text_truncated"} == set(result["hits"][0])
    assert ["Lockout/Tagout for Pump Maintenance", "Removing a Lock When the Owner Is Absent"] in [
        [h["title"], h["section"]] for h in result["hits"]
    ]
    assert all(0 < h["score"] <= 1 and len(h["text"]) <= 902 for h in result["hits"])


async def test_search_documentation_on_a_folder_index_survives_close_and_reopen(
    docs_embedder: CachingEmbedder, registry: Database, tmp_path: Path
) -> None:
    config = IndexConfig(path=str(tmp_path / "qdrant"))
    async with DocumentIndex(config, docs_embedder) as index:
        await ingest(None, index, IngestManifest(registry, "manuals"))
        before = await search(docs_kernel(index), question="What NPSH margin do I need for hot water?", top_k=8)
    async with DocumentIndex(config, docs_embedder) as reopened:
        after = await search(docs_kernel(reopened), question="What NPSH margin do I need for hot water?", top_k=8)
    assert after == before and after["count"] == 8
    assert sum(len(h["text"]) for h in after["hits"]) <= 8 * 502


async def test_an_empty_index_tells_the_model_to_have_pumpops_ingest_run(docs_embedder: CachingEmbedder) -> None:
    async with DocumentIndex(IndexConfig(path=":memory:"), docs_embedder) as index:
        with pytest.raises(Exception) as caught:
            await search(docs_kernel(index), question="seal flush plan")
    assert "pumpops ingest" in str(pumpops_cause(caught.value))


@pytest.mark.parametrize("top_k", [0, 9])
async def test_top_k_outside_1_to_8_is_refused_in_the_body(docs_embedder: CachingEmbedder, top_k: int) -> None:
    async with DocumentIndex(IndexConfig(path=":memory:"), docs_embedder) as index:
        with pytest.raises(Exception) as caught:
            await search(docs_kernel(index), question="seal flush plan", top_k=top_k)
    assert f"top_k={top_k}" in str(pumpops_cause(caught.value)) and "1 to 8" in str(pumpops_cause(caught.value))


@pytest.mark.parametrize("top_k", ["many", 2.5, 0, MAX_TOP_K + 1])
async def test_a_bad_top_k_is_answered_with_a_suggestion_the_search_accepts(
    docs_embedder: CachingEmbedder, top_k: object
) -> None:
    async with DocumentIndex(IndexConfig(path=":memory:"), docs_embedder) as index:
        kernel = docs_kernel(index)
        kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, validate_arguments)  # the type check every door runs
        with pytest.raises(Exception) as caught:
            await search(kernel, question="seal flush plan", top_k=top_k)
    message = str(pumpops_cause(caught.value))
    suggestion = re.search(r"e\.g\. top_k=(\d+)", message)
    assert suggestion is not None, message
    assert MIN_TOP_K <= int(suggestion.group(1)) <= MAX_TOP_K, message


def test_search_documentation_is_declared_a_read(docs_embedder: CachingEmbedder) -> None:
    kernel = docs_kernel(DocumentIndex(IndexConfig(path=":memory:"), docs_embedder))
    assert traits_of(kernel.get_function("docs", "search_documentation")).effect is Effect.READ


def test_the_docs_tool_schema_matches_the_snapshot(docs_embedder: CachingEmbedder) -> None:
    kernel = docs_kernel(DocumentIndex(IndexConfig(path=":memory:"), docs_embedder))
    definitions = [
        kernel_function_metadata_to_function_call_format(m)
        for m in kernel.get_full_list_of_function_metadata()
        if m.plugin_name == "docs"
    ]
    rendered = json.dumps(definitions, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(rendered, encoding="utf-8")
    assert rendered == SNAPSHOT.read_text(encoding="utf-8")
    function = definitions[0]["function"]
    assert function["description"].startswith("Returns")
    assert all("e.g." in p["description"] for p in function["parameters"]["properties"].values())
