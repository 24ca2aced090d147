"""Checks that act: a failing answer is asked for once more, then replaced; an off-topic one is refused.

The runner holds the answer round's text back until the answer is settled here (see `turn.runner`), so the
operator never sees an answer that failed a check:

1. The question is off-topic (`checks.scope.off_topic`): whatever the answer says, the operator gets the scoped
   refusal (``refused``).
2. The answer passes every acting check (`checks.review.Review.acting`): it is shown as written.
3. It fails: the model is asked once more, without tools, with each finding stated plainly
   (`checks.review.retry_request`). An answer that passes then is shown (``retried``).
4. It fails again, or the model could not answer again (deadline, service failure): the operator gets the answer
   code builds from the evidence (`checks.fallback.evidence_answer`, ``replaced``).

Each step is a `turn.events.Correction` in the turn result. This lives in the turn, not in a chat connector, so
it holds for every chat service.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field

from checks.evidence import Evidence
from checks.fallback import evidence_answer
from checks.review import Finding, Review, retry_request, review_answer
from checks.scope import REFUSAL, off_topic
from turn.events import Correction

__all__ = ["AskAgain", "Settled", "TurnFacts", "settle_answer"]

AskAgain = Callable[[str], Awaitable[str | None]]
"""Asks the model once more, without tools, with the given message; the new answer, or None if none came."""


@dataclass(frozen=True)
class Settled:
    """The answer to show, what the checks did to get it, and the checks' review of it."""

    answer: str
    review: Review
    corrections: list[Correction] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the shown answer is not the model's first."""
        return bool(self.corrections)


@dataclass(frozen=True)
class TurnFacts:
    """What the checks judge an answer against: the turn's evidence and what else the session read."""

    evidence: Evidence
    question: str
    read_texts: Sequence[str]
    """The operator's messages and the session's tool results, this turn's included."""
    domain: Collection[str]
    """The words of the plant: the tools' descriptions and what the session read before this question
    (`checks.scope.domain_words`)."""


async def settle_answer(answer: str, facts: TurnFacts, ask_again: AskAgain) -> Settled:
    """The answer the operator sees for the model's ``answer`` (see the module docstring)."""
    review = _review(answer, facts)
    if not answer.strip():
        return Settled(answer, review)  # nothing to show or judge: the turn is degraded and says why
    why = off_topic(facts.question, facts.evidence, facts.domain)
    if why is not None:  # whatever the answer says, an off-topic question gets the refusal, not a retry
        return Settled(REFUSAL, _review(REFUSAL, facts), [Correction(check="off_topic", finding=why, action="refused")])
    findings = review.acting()
    if not findings:
        return Settled(answer, review)
    again = await ask_again(retry_request(findings))
    if again is not None and again.strip():
        second = _review(again, facts)
        if not second.acting():
            return Settled(again, second, _corrections(findings, "retried"))
        findings = [*findings, *(f for f in second.acting() if f not in findings)]
    replaced = evidence_answer(facts.evidence, findings, facts.question)
    return Settled(replaced, _review(replaced, facts), _corrections(findings, "replaced"))


def _review(answer: str, facts: TurnFacts) -> Review:
    return review_answer(answer, facts.evidence, facts.question, facts.read_texts)


def _corrections(findings: Sequence[Finding], action: str) -> list[Correction]:
    return [Correction(check=f.check, finding=f.finding, action=action) for f in findings]
