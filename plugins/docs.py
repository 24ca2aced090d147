"""The `docs` plugin: search the maintenance manuals and return passages with citations."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict
from semantic_kernel.functions import kernel_function

from memory import DocumentIndex, InvalidSearchError, SearchHit
from plugins.declarations import reads
from plugins.results import to_json

MIN_TOP_K = 1
MAX_TOP_K = 8
DEFAULT_TOP_K = 4
MAX_TEXT_CHARS = 900
# All hits' text together stays near this, so top_k=8 does not outgrow the tool-result budget.
TOTAL_TEXT_CHARS = 4000
MIN_TEXT_CHARS = 300


class DocsHit(BaseModel):
    """One passage: what to cite (title, section, chunk id), how close it is, and its text."""

    model_config = ConfigDict(frozen=True)

    title: str
    section: str
    chunk_id: str
    document: str
    score: float
    text: str
    text_truncated: bool


class DocsSearchResult(BaseModel):
    """The passages found for a question, best first."""

    model_config = ConfigDict(frozen=True)

    question: str
    count: int
    hits: list[DocsHit]


class DocsPlugin:
    """Thin kernel-function adapter over `DocumentIndex`."""

    def __init__(self, index: DocumentIndex, *, max_text_chars: int = MAX_TEXT_CHARS) -> None:
        self._index = index
        self._max_text_chars = max_text_chars

    @reads
    @kernel_function(
        name="search_documentation",
        description=(
            "Returns the passages of the maintenance manuals that best answer a question, best first, each with "
            "its title, section, chunk id, similarity score (0-1) and text. Use it for procedures, standards and "
            "limits (e.g. ISO 10816-3 zones), troubleshooting causes and checks, and pump model manuals; cite the "
            "title and section you rely on. For the current state of a pump (readings, alarms, status) use the "
            "assets, alarms and sensors tools instead."
        ),
    )
    async def search_documentation(
        self,
        question: Annotated[
            str, "The question in plain words, e.g. 'How do I verify zero energy before working on a pump?'"
        ],
        top_k: Annotated[
            int, f"How many passages to return, {MIN_TOP_K}-{MAX_TOP_K}, e.g. {DEFAULT_TOP_K} (the default)."
        ] = DEFAULT_TOP_K,
    ) -> str:
        """Manual passages for a question as JSON."""
        if not MIN_TOP_K <= top_k <= MAX_TOP_K:
            raise InvalidSearchError(
                f"top_k={top_k!r} is out of range; use {MIN_TOP_K} to {MAX_TOP_K}, e.g. top_k={DEFAULT_TOP_K}."
            )
        hits = await self._index.search(question, top_k)
        cap = min(self._max_text_chars, max(MIN_TEXT_CHARS, TOTAL_TEXT_CHARS // top_k))
        return to_json(DocsSearchResult(question=question, count=len(hits), hits=[_shape(hit, cap) for hit in hits]))


def _shape(hit: SearchHit, cap: int) -> DocsHit:
    text = hit.text
    truncated = len(text) > cap
    if truncated:
        cut = text[:cap]
        text = (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " …"
    return DocsHit(
        title=hit.title,
        section=hit.section,
        chunk_id=hit.chunk_id,
        document=hit.document,
        score=hit.score,
        text=text,
        text_truncated=truncated,
    )
