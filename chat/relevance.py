"""How close an operator's message is to what the tools answer: a routing aid for the local model.

The 1.5B model decides by itself whether to call a tool, and answers some manual questions (a
lockout procedure, NPSH) from its own memory, which the manuals may contradict. `DomainRelevance`
measures the message against the tool descriptions and the manuals index with the embedding model
the docs search already uses: a question about pumps or the manuals' subjects scores 0.55 and more,
small talk and trivia 0.28 and less. A high score adds a call the model would not have made; a low
score only withholds one the model was unsure of (its opening score just above the threshold, where
trivia such as "What is the capital of France?" lands), because terse operator questions ("Any open
tickets?", "Is anything broken?") score as low as small talk and are decided by the model alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memory import DocumentIndex, DocumentIndexError

__all__ = ["DomainRelevance"]


class DomainRelevance:
    """The best cosine similarity of a message to a tool description or a manual passage (0 to 1).

    A `chat.local.service.Relevance`. The descriptions are embedded once per tool list;
    the manuals are searched by meaning (one passage). An index that cannot answer (empty, locked by
    another process, failing) leaves the tools' part; an embedding model that fails, 0: either way the
    model's own decision stands.
    """

    def __init__(self, manuals: DocumentIndex) -> None:
        self._manuals = manuals
        self._described: tuple[str, ...] = ()
        self._vectors: np.ndarray | None = None

    async def __call__(self, text: str, tools: Sequence[Mapping[str, Any]]) -> float:
        """The relevance of ``text`` to ``tools`` and the manuals; 0 for an empty message."""
        if not text.strip():
            return 0.0
        scores = [0.0]
        try:
            scores.append(await self._to_tools(text, tools))
            scores.extend(hit.score for hit in await self._manuals.search(text, top_k=1, hybrid=False))
        except DocumentIndexError:
            pass  # what could be measured stands; the docs tool reports the failure when it is called
        return max(scores)

    async def _to_tools(self, text: str, tools: Sequence[Mapping[str, Any]]) -> float:
        described = tuple(str(tool.get("function", {}).get("description") or "") for tool in tools)
        described = tuple(d for d in described if d)
        if not described:
            return 0.0
        embedder = self._manuals.embedder
        if self._vectors is None or described != self._described:
            self._vectors = await embedder.embed(list(described))
            self._described = described
        question = (await embedder.embed([text]))[0]
        return float((self._vectors @ question).max())
