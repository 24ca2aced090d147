"""Retrieval quality on the labeled question set: recall@k and mean reciprocal rank."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.corpus import LabeledQuestion
from memory.index import DocumentIndex


@dataclass(frozen=True)
class RetrievalScores:
    """Recall@1, recall@5 and MRR (over the first ``depth`` results) of one retriever."""

    questions: int
    recall_at_1: float
    recall_at_5: float
    mrr: float


def first_relevant_rank(question: LabeledQuestion, found: Sequence[tuple[str, str]]) -> int | None:
    """The 1-based rank of the first (document, section) result matching the label, or None."""
    for rank, (document, section) in enumerate(found, start=1):
        if document == question.document and section == question.section:
            return rank
    return None


def score_ranks(ranks: Sequence[int | None]) -> RetrievalScores:
    """Aggregate first-relevant ranks into recall@1, recall@5 and MRR."""
    count = len(ranks)
    if count == 0:
        return RetrievalScores(questions=0, recall_at_1=0.0, recall_at_5=0.0, mrr=0.0)
    return RetrievalScores(
        questions=count,
        recall_at_1=sum(1 for r in ranks if r == 1) / count,
        recall_at_5=sum(1 for r in ranks if r is not None and r <= 5) / count,
        mrr=sum(1 / r for r in ranks if r is not None) / count,
    )


async def evaluate_index(
    index: DocumentIndex, questions: Sequence[LabeledQuestion], *, depth: int = 10, hybrid: bool = True
) -> RetrievalScores:
    """Search ``index`` for every labeled question and score the rankings."""
    ranks = []
    for question in questions:
        hits = await index.search(question.question, depth, hybrid=hybrid)
        ranks.append(first_relevant_rank(question, [(hit.document, hit.section) for hit in hits]))
    return score_ranks(ranks)
