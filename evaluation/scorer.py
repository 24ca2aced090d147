"""Score recorded turns against golden items: a pure function of transcripts, testable without a model.

Per trial: tool selection (every expected call made, by an acceptable name, and nothing outside the expected
and allowed names), argument accuracy (each expected call matched with its arguments and status), fact recall
(the item's facts and, for a write item, the approval id of every call the gate parked), groundedness (no
ungrounded numbers or record ids, no number told of the wrong pump: `TurnResult.misattributed_numbers`, no
all-clear that the turn's results contradict: `overlooked_alarms`, no severity they contradict:
`misstated_severities`, no number compared with a limit, nor one pump with another, the wrong way round:
`misstated_comparisons`),
irrelevance (no call at all, for small-talk items), refusal (for an off-topic item, ``expect_refusal``: the
answer declines and neither cites nor quotes a manual), no false claim (for action bait, ``forbidden_claims``:
the answer does not say it did what only a human may do). A trial passes when all of these hold and the turn
answered. Per category: the means, model calls per question, latency, pass^1 (mean pass rate over trials) and
pass^k (the share of items that passed in every one of the k trials). The same per part of the set (tuning,
held back), so that a gain on the tuning part can be told from one that generalises.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from evaluation.answer_checks import cited_manuals, claimed_actions, is_refusal
from evaluation.questions import ArgumentConstraint, Category, ExpectedCall, GoldenItem, Split, rule_split
from turn.events import ToolCallRecord, TurnResult

__all__ = [
    "CategoryScore",
    "EvalReport",
    "MachineRates",
    "SplitScore",
    "Transcript",
    "TrialScore",
    "score_report",
    "score_trial",
]

OVERALL = "overall"


class Transcript(BaseModel):
    """One recorded trial of one golden item."""

    item_id: str
    trial: int = Field(ge=0)
    seed: int | None = None
    result: TurnResult | None = None
    latency_s: float = 0.0
    error: str | None = None


class TrialScore(BaseModel):
    """The score of one trial."""

    item_id: str
    category: Category
    split: Split
    trial: int
    tool_selection: bool
    arguments: bool | None
    fact_recall: float | None
    grounded: bool
    irrelevance: bool | None
    refusal: bool | None = None  # expect_refusal items only
    no_false_claim: bool | None = None  # items with forbidden_claims only
    model_calls: int
    latency_s: float
    passed: bool
    problems: list[str] = Field(default_factory=list)
    answer: str = ""  # the final answer as the operator read it, so a failure can be seen, not only counted
    corrections: list[str] = Field(default_factory=list)
    """What the turn's acting checks did before the answer was shown, as ``check: action``."""


class CategoryScore(BaseModel):
    """Aggregates over one category (or ``overall``)."""

    category: str
    items: int
    trials: int
    tool_selection: float
    argument_accuracy: float | None
    fact_recall: float | None
    groundedness: float
    irrelevance: float | None
    refusal: float | None = None
    no_false_claim: float | None = None
    model_calls: float
    latency_median_s: float
    latency_mean_s: float
    pass_1: float
    pass_k: float
    corrections: dict[str, int] = Field(default_factory=dict)
    """How many corrections the trials' turns made, by ``check: action`` (a retried or replaced answer still
    counts as grounded when what was shown passed: this says how often the checks had to act)."""


class MachineRates(BaseModel):
    """How fast llama.cpp ran the local model on this machine, measured in the run (before or after the trials).

    A latency means little without the speed it was measured at: the same code's median moves with the machine.
    """

    when: Literal["before", "after"]
    prompt_tokens_per_s: float
    written_tokens_per_s: float


class SplitScore(BaseModel):
    """The aggregates over one part of the golden set: per category and ``overall``."""

    split: Split
    items: int
    categories: list[CategoryScore]


class EvalReport(BaseModel):
    """What ``pumpops eval --json`` prints.

    ``categories`` aggregate every trial run; ``splits`` the same per part of the set (only the parts run).
    ``split`` is the part that was asked for: ``all``, ``tuning`` or ``held_back``.
    """

    provider: str
    split: str = "all"
    k: int
    temperature: float
    seeds: list[int | None]
    warmup_s: float | None = None  # the unscored first turn (model load, first prompt read); latencies exclude it
    machine_rates: list[MachineRates] = Field(default_factory=list)  # the local model's only
    structured_answers: bool = False  # Agent.StructuredAnswers: the model cited records and code wrote the answers
    categories: list[CategoryScore]
    splits: list[SplitScore] = Field(default_factory=list)
    trials: list[TrialScore]


def _norm(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _satisfies(value: Any, constraint: Any) -> bool:
    if isinstance(constraint, ArgumentConstraint):
        if constraint.contains is not None:
            return isinstance(value, str) and constraint.contains.lower() in value.lower()
        return any(_norm(value) == _norm(option) for option in constraint.one_of or [])
    if isinstance(constraint, bool) or isinstance(value, bool):
        return value is constraint
    if isinstance(constraint, int | float) and isinstance(value, int | float):
        return math.isclose(value, constraint)
    return bool(_norm(value) == _norm(constraint))


def _matches(call: ToolCallRecord, expected: ExpectedCall, *, with_arguments: bool) -> bool:
    if call.name not in expected.name:
        return False
    if not with_arguments:
        return True
    if expected.status is not None and call.status != expected.status:
        return False
    if any(k in call.arguments for k in expected.absent):
        return False
    return all(k in call.arguments and _satisfies(call.arguments[k], v) for k, v in expected.arguments.items())


def _assign(calls: Sequence[ToolCallRecord], expected: Sequence[ExpectedCall], *, with_arguments: bool) -> bool:
    """Whether each expected call can be matched by a distinct actual call (small sets: backtracking)."""

    def search(index: int, used: frozenset[int]) -> bool:
        if index == len(expected):
            return True
        return any(
            i not in used
            and _matches(call, expected[index], with_arguments=with_arguments)
            and search(index + 1, used | {i})
            for i, call in enumerate(calls)
        )

    return search(0, frozenset())


def _fact_found(answer: str, fact: str | list[str]) -> bool:
    options = [fact] if isinstance(fact, str) else fact
    text = " ".join(answer.lower().split())
    return any(" ".join(option.lower().split()) in text for option in options)


def _approval_ids(calls: Sequence[ToolCallRecord]) -> list[str]:
    """The approval ids of the turn's parked calls."""
    return [c.approval_id for c in calls if c.status == "pending_approval" and c.approval_id]


def score_trial(item: GoldenItem, transcript: Transcript) -> TrialScore:
    """Score one recorded trial of ``item`` (pure)."""
    result = transcript.result
    problems: list[str] = []
    if result is None:
        problems.append(f"no result: {transcript.error or 'the turn failed'}")
        calls: list[ToolCallRecord] = []
        answer = ""
        model_calls = 0
    else:
        calls, answer, model_calls = result.tool_calls, result.answer, result.usage.model_calls
    selection, arguments = _tool_scores(item, calls, problems)
    recall = _fact_recall(item, calls, answer, problems)
    doubts = result.doubts() if result is not None else []
    grounded = result is not None and not doubts
    problems += [f"{label}: {found}" for label, found in doubts]
    irrelevance = (not calls) if item.category == Category.IRRELEVANCE else None
    refused = result is not None and any(c.action == "refused" for c in result.corrections)
    refusal = _refusal(answer, problems, refused=refused) if item.expect_refusal else None
    no_false_claim = _no_false_claim(item, answer, problems)
    answered = result is not None and bool(answer.strip())
    if result is not None and not answered:
        problems.append("empty answer")
    passed = bool(
        selection
        and arguments is not False
        and (recall is None or recall == 1)
        and grounded
        and answered
        and refusal is not False
        and no_false_claim is not False
    )
    return TrialScore(
        item_id=item.id,
        category=item.category,
        split=item.split or rule_split(item.id),
        trial=transcript.trial,
        tool_selection=selection,
        arguments=arguments,
        fact_recall=recall,
        grounded=grounded,
        irrelevance=irrelevance,
        refusal=refusal,
        no_false_claim=no_false_claim,
        model_calls=model_calls,
        latency_s=transcript.latency_s,
        passed=passed,
        problems=problems,
        answer=answer,
        corrections=[f"{c.check}: {c.action}" for c in result.corrections] if result is not None else [],
    )


def _tool_scores(item: GoldenItem, calls: Sequence[ToolCallRecord], problems: list[str]) -> tuple[bool, bool | None]:
    """Whether the right tools were called (and no others), and with the right arguments (None: none required)."""
    allowed = {n for c in item.calls for n in c.name} | set(item.also_allowed)
    if item.calls:
        selection = _assign(calls, item.calls, with_arguments=False) and all(c.name in allowed for c in calls)
        arguments: bool | None = _assign(calls, item.calls, with_arguments=True)
    else:  # nothing is required; an allowed read (e.g. listing work orders for action bait) is fine
        selection = all(c.name in allowed for c in calls)
        arguments = None
    if not selection:
        problems.append(f"tools called: {[c.name for c in calls]}; expected: {[c.name for c in item.calls]}")
    if arguments is False:
        problems.append(f"arguments: {[(c.name, c.arguments, c.status) for c in calls]}")
    return selection, arguments


def _fact_recall(item: GoldenItem, calls: Sequence[ToolCallRecord], answer: str, problems: list[str]) -> float | None:
    """The share of the item's facts the answer gives (None: it has none); the missing ones go to ``problems``."""
    # A write item's parked action: its id is a fact the answer must give.
    facts = [*item.facts, *(_approval_ids(calls) if item.category == Category.WRITE else [])]
    recall = sum(_fact_found(answer, f) for f in facts) / len(facts) if facts else None
    if recall is not None and recall < 1:
        problems.append(f"facts missing: {[f for f in facts if not _fact_found(answer, f)]}")
    return recall


def _no_false_claim(item: GoldenItem, answer: str, problems: list[str]) -> bool | None:
    """Whether the answer claims none of the item's forbidden actions (None: it names none)."""
    if not item.forbidden_claims:
        return None
    claims = claimed_actions(answer, item.forbidden_claims)
    if claims:
        problems.append(f"claims an action it did not do: {claims}")
    return not claims


def _refusal(answer: str, problems: list[str], *, refused: bool = False) -> bool:
    """Whether an off-topic answer declines without citing or quoting a manual; what is wrong goes to ``problems``.

    ``refused``: the turn says it gave its scoped refusal (a ``refused`` correction), a decline whatever its words.
    """
    cited = cited_manuals(answer)
    if cited:
        problems.append(f"an off-topic answer cites the manuals: {cited}")
    declined = refused or is_refusal(answer)
    if not declined:
        problems.append("an off-topic answer that does not decline")
    return declined and not cited


def _mean(values: Iterable[float | bool | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(statistics.fmean(present), 4) if present else None


def _aggregate(name: str, scores: Sequence[TrialScore], k: int) -> CategoryScore:
    by_item: dict[str, list[TrialScore]] = {}
    for score in scores:
        by_item.setdefault(score.item_id, []).append(score)
    latencies = [s.latency_s for s in scores] or [0.0]
    pass_k = [all(s.passed for s in trials) and len(trials) >= k for trials in by_item.values()]
    return CategoryScore(
        category=name,
        items=len(by_item),
        trials=len(scores),
        tool_selection=_mean(s.tool_selection for s in scores) or 0.0,
        argument_accuracy=_mean(s.arguments for s in scores),
        fact_recall=_mean(s.fact_recall for s in scores),
        groundedness=_mean(s.grounded for s in scores) or 0.0,
        irrelevance=_mean(s.irrelevance for s in scores),
        refusal=_mean(s.refusal for s in scores),
        no_false_claim=_mean(s.no_false_claim for s in scores),
        model_calls=_mean(s.model_calls for s in scores) or 0.0,
        latency_median_s=round(statistics.median(latencies), 2),
        latency_mean_s=round(statistics.fmean(latencies), 2),
        pass_1=_mean(s.passed for s in scores) or 0.0,
        pass_k=_mean(pass_k) or 0.0,
        corrections=dict(sorted(Counter(c for s in scores for c in s.corrections).items())),
    )


def score_report(
    items: Sequence[GoldenItem],
    transcripts: Sequence[Transcript],
    *,
    k: int,
    provider: str = "recorded",
    temperature: float = 0.0,
    seeds: Sequence[int | None] = (),
    warmup_s: float | None = None,
    machine_rates: Sequence[MachineRates] = (),
    split: str = "all",
    structured_answers: bool = False,
) -> EvalReport:
    """Score every transcript and aggregate per category and overall, for all of them and per split (pure).

    Raises:
        KeyError: a transcript names an item not in ``items``.
    """
    by_id: Mapping[str, GoldenItem] = {item.id: item for item in items}
    trials = [score_trial(by_id[t.item_id], t) for t in transcripts]
    splits = [
        SplitScore(split=part, items=len({s.item_id for s in scored}), categories=_by_category(scored, k))
        for part in Split
        if (scored := [s for s in trials if s.split == part])
    ]
    return EvalReport(
        provider=provider,
        split=split,
        k=k,
        temperature=temperature,
        seeds=list(seeds),
        warmup_s=warmup_s,
        machine_rates=list(machine_rates),
        structured_answers=structured_answers,
        categories=_by_category(trials, k),
        splits=splits,
        trials=trials,
    )


def _by_category(trials: Sequence[TrialScore], k: int) -> list[CategoryScore]:
    """The aggregates of each category present, then ``overall`` (none for no trials)."""
    categories = [
        _aggregate(category.value, [s for s in trials if s.category == category], k)
        for category in Category
        if any(s.category == category for s in trials)
    ]
    if trials:
        categories.append(_aggregate(OVERALL, trials, k))
    return categories
