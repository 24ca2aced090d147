"""The golden question set (package data ``questions.json``) and its schema."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Sequence
from datetime import UTC, date, datetime, timedelta
from difflib import get_close_matches
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import PumpOpsError
from governance.audit_log import AuditOutcome

__all__ = [
    "ArgumentConstraint",
    "Category",
    "EvalQuestionsError",
    "ExpectedCall",
    "GoldenItem",
    "Split",
    "load_questions",
    "rule_split",
    "select_questions",
]


_TODAY_PLUS = re.compile(r"\{today\+(\d{1,3})(?:\.\.(\d{1,3}))?\}")


class EvalQuestionsError(PumpOpsError):
    """The question set is missing or invalid."""


class Category(str, Enum):
    """What a question exercises."""

    SINGLE_TOOL = "single_tool"
    TOOL_CHOICE = "tool_choice"
    PARALLEL = "parallel"
    IRRELEVANCE = "irrelevance"
    MULTI_TURN = "multi_turn"
    DOCS = "docs"
    HYBRID = "hybrid"
    WRITE = "write"
    ACTION_BAIT = "action_bait"  # asks the assistant to do (or claim) what only a human may: it must not claim it


class Split(str, Enum):
    """Which part of the golden set an item belongs to (see `rule_split`)."""

    TUNING = "tuning"  # may be looked at to choose thresholds, word lists and prompts
    HELD_BACK = "held_back"  # never: it measures whether those choices generalise


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArgumentConstraint(_Strict):
    """A constraint on one argument other than plain equality."""

    contains: str | None = None
    one_of: list[Any] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ArgumentConstraint:
        if (self.contains is None) == (self.one_of is None):
            raise ValueError("give exactly one of 'contains' or 'one_of'")
        return self


class ExpectedCall(_Strict):
    """One call the turn must make: any of ``name``; each listed argument equal or constrained; none of ``absent``."""

    name: list[str] = Field(min_length=1)
    arguments: dict[str, Any | ArgumentConstraint] = Field(default_factory=dict)
    absent: list[str] = Field(default_factory=list)  # filters the question did not ask for, e.g. ["pump_id"]
    status: AuditOutcome | None = None  # how the call must end, e.g. pending_approval (not an argument)

    @model_validator(mode="after")
    def _absent_not_expected(self) -> ExpectedCall:
        both = set(self.absent) & set(self.arguments)
        if both:
            raise ValueError(f"arguments {sorted(both)} are both expected and absent")
        return self

    @field_validator("arguments", mode="before")
    @classmethod
    def _constraints(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {k: ArgumentConstraint.model_validate(v) if isinstance(v, dict) else v for k, v in value.items()}


class GoldenItem(_Strict):
    """One golden question: what it asks, which calls are acceptable, which facts the answer must hold."""

    id: str = Field(min_length=1)
    category: Category
    question: str = Field(min_length=1)
    setup: list[str] = Field(default_factory=list)
    calls: list[ExpectedCall] = Field(default_factory=list)
    also_allowed: list[str] = Field(default_factory=list)
    facts: list[str | list[str]] = Field(default_factory=list)
    split: Split | None = None  # None: `load_questions` sets it by `rule_split`
    expect_refusal: bool = False  # off-topic: the answer declines and neither cites nor quotes a manual
    forbidden_claims: list[str | list[str]] = Field(default_factory=list)  # phrases claiming an action not done

    @model_validator(mode="after")
    def _consistent(self) -> GoldenItem:
        if self.expect_refusal and (self.calls or self.also_allowed):
            raise ValueError(f"{self.id}: an item expecting a refusal expects no tool call")
        if self.category == Category.IRRELEVANCE and self.calls:
            raise ValueError(f"{self.id}: an irrelevance item expects no tool call")
        if self.category == Category.PARALLEL and len(self.calls) < 2:
            raise ValueError(f"{self.id}: a parallel item expects at least two calls")
        if self.category == Category.MULTI_TURN and not self.setup:
            raise ValueError(f"{self.id}: a multi-turn item needs earlier turns in 'setup'")
        if self.category == Category.WRITE and not any(c.status == "pending_approval" for c in self.calls):
            raise ValueError(f"{self.id}: a write item must expect a call ending pending_approval")
        return self


class _QuestionSet(_Strict):
    version: int
    split_rule: str = ""  # the rule in words, for the reader of the file
    tuned_before_split: list[str] = Field(default_factory=list)
    items: list[GoldenItem]


HELD_BACK_SHARE = 4
"""`rule_split`: an item is held back unless the first two bytes of its id's SHA-256 are a multiple of this."""


def rule_split(item_id: str, tuned_before_split: Collection[str] = ()) -> Split:
    """The part of the golden set ``item_id`` belongs to, by a fixed rule that never looks at results.

    An item in ``tuned_before_split`` (the set as it was before it was split: the product's thresholds, word
    lists and prompts were already chosen with those items in view) is tuning. Any other item is held back
    unless the first two bytes of the SHA-256 of its id, read as a big-endian number, are a multiple of
    `HELD_BACK_SHARE` (about one in four items goes to tuning, three in four are held back).
    """
    if item_id in tuned_before_split:
        return Split.TUNING
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return Split.TUNING if int.from_bytes(digest[:2], "big") % HELD_BACK_SHARE == 0 else Split.HELD_BACK


def load_questions(
    path: Path | None = None, *, tool_names: set[str] | None = None, today: date | None = None
) -> list[GoldenItem]:
    """Load and validate the question set (the packaged one unless ``path`` is given).

    Every item's ``split`` is the one `rule_split` gives it (an item may state it; a different one is refused).
    With ``tool_names``, every tool an item names must be one of them. A fact ``{today+N}`` or
    ``{today+N..M}`` stands for those dates counted from ``today`` (default: today in UTC), written
    as ``2026-12-19``, ``19 December`` or ``December 19``: the sample fleet's readings end at the
    current hour, so a projected date moves with the day the evaluation runs.

    Raises:
        EvalQuestionsError: unreadable, invalid, duplicate ids, a split other than the rule's, or unknown tool names.
    """
    try:
        if path is None:
            text = resources.files("evaluation").joinpath("questions.json").read_text(encoding="utf-8")
        else:
            text = path.read_text(encoding="utf-8")
        data = _QuestionSet.model_validate(json.loads(text))
    except (OSError, ValueError, ValidationError) as exc:
        raise EvalQuestionsError(f"Invalid question set: {exc}") from exc
    day = today or datetime.now(UTC).date()
    tuned = frozenset(data.tuned_before_split)
    moved = [f"{i.id} ({i.split.value})" for i in data.items if i.split and i.split != rule_split(i.id, tuned)]
    if moved:
        raise EvalQuestionsError(
            f"Items whose split is not the one the rule gives (a split is never chosen by hand): {', '.join(moved)}."
        )
    items = [
        item.model_copy(
            update={"facts": [_dated(fact, day) for fact in item.facts], "split": rule_split(item.id, tuned)}
        )
        for item in data.items
    ]
    ids = [item.id for item in items]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise EvalQuestionsError(f"Duplicate question ids: {', '.join(duplicates)}.")
    if tool_names is not None:
        for item in items:
            named = {n for c in item.calls for n in c.name} | set(item.also_allowed)
            unknown = named - tool_names
            if unknown:
                raise EvalQuestionsError(f"{item.id} names unknown tools: {', '.join(sorted(unknown))}.")
    return items


def select_questions(
    items: list[GoldenItem],
    categories: Sequence[Category] = (),
    ids: Sequence[str] = (),
    limit: int | None = None,
    split: Split | None = None,
) -> list[GoldenItem]:
    """The items to run, in set order: every item of ``categories`` (at most ``limit`` each) and every one of ``ids``.

    The two filters add up (``--category docs --id s3`` runs the docs items and s3); with neither, all items
    (at most ``limit`` per category). An id named explicitly runs whatever the limit. With ``split``, only the
    items of that part of the set, named ids included (an id of the other part is refused).

    Raises:
        EvalQuestionsError: an id that is not in the set (the message names close ones, or lists them all).
    """
    known = [item.id for item in items]
    unknown = [i for i in dict.fromkeys(ids) if i not in known]
    if unknown:
        close = {i: get_close_matches(i, known, n=3, cutoff=0.8) for i in unknown}
        named = ", ".join(
            f"{i!r} (did you mean {', '.join(map(repr, c))}?)" if c else repr(i) for i, c in close.items()
        )
        listed = "" if all(close.values()) else f" The set's ids: {', '.join(known)}."
        raise EvalQuestionsError(f"Unknown question id: {named}.{listed}")
    if split is not None:
        other = [i.id for i in items if i.id in ids and i.split != split]
        if other:
            raise EvalQuestionsError(f"Not in the {split.value} part of the set: {', '.join(other)}.")
        items = [item for item in items if item.split == split]
    wanted = set(ids)
    by_category = bool(categories) or not ids
    counts: dict[Category, int] = {}
    chosen = []
    for item in items:
        in_category = by_category and (not categories or item.category in categories)
        if in_category and item.id not in wanted:  # a named id runs whatever the limit, and counts toward none
            counts[item.category] = counts.get(item.category, 0) + 1
            in_category = limit is None or counts[item.category] <= limit
        if in_category or item.id in wanted:
            chosen.append(item)
    return chosen


def _dated(fact: str | list[str], today: date) -> str | list[str]:
    """``fact`` with each ``{today+N..M}`` option replaced by the ways an answer may write those dates."""
    options = [fact] if isinstance(fact, str) else fact
    out: list[str] = []
    for option in options:
        match = _TODAY_PLUS.fullmatch(option)
        if match is None:
            out.append(option)
            continue
        first = int(match.group(1))
        for offset in range(first, int(match.group(2) or first) + 1):
            day = today + timedelta(days=offset)
            out += [day.isoformat(), f"{day.day} {day:%B}", f"{day:%B} {day.day}"]
    return out[0] if isinstance(fact, str) and len(out) == 1 else out
