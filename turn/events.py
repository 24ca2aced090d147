"""What a turn emits while it runs, and the turn result (the `ask --json` contract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field


class ToolCallRecord(BaseModel):
    """One tool call of a turn, as reported to people and machines."""

    name: str
    arguments: dict[str, Any]
    status: str
    summary: str
    duration_ms: float
    approval_id: str | None = None
    """The approval a ``pending_approval`` call waits on (``APR-…``): what a supervisor approves or rejects."""


class Usage(BaseModel):
    """Model calls and tokens spent by a turn."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False


class Correction(BaseModel):
    """An answer check that acted on the turn's answer: what it found and what the turn did about it."""

    check: str
    """The check's name, e.g. ``unbacked_actions``, ``unsafe_reassurance``, ``off_topic``."""
    finding: str
    action: str
    """``retried`` (the model answered again and passed), ``replaced`` (the answer was built from the evidence)
    or ``refused`` (off-topic: the scoped refusal was given)."""


class TurnResult(BaseModel):
    """The result of one turn (DESIGN.md "Turn result JSON")."""

    answer: str
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    degraded: bool = False
    reason: str | None = None
    ungrounded: list[str] = Field(default_factory=list)
    misattributed_numbers: list[str] = Field(default_factory=list)
    overlooked_alarms: list[str] = Field(default_factory=list)
    misstated_severities: list[str] = Field(default_factory=list)
    misstated_comparisons: list[str] = Field(default_factory=list)
    corrections: list[Correction] = Field(default_factory=list)
    """What the acting checks changed before the answer was shown; the warnings above are the shown answer's."""
    usage: Usage = Field(default_factory=Usage)
    session: str

    def doubts(self) -> list[tuple[str, list[str]]]:
        """What the answer checks found, as (what it is, the findings), in the order they are shown; empty if none.

        The one wording of each check: the chat's warnings and the evaluation's problems both use it.
        """
        checks = (
            ("unverified numbers or ids (found in no tool result)", self.ungrounded),
            ("numbers told of the wrong pump", self.misattributed_numbers),
            ("the answer says all is well, but the tool results show active alarms", self.overlooked_alarms),
            ("severities the tool results contradict", self.misstated_severities),
            ("comparisons the numbers contradict", self.misstated_comparisons),
        )
        return [(label, list(found)) for label, found in checks if found]


@dataclass(frozen=True)
class ModelCallStarted:
    """A request to the model is about to be sent."""

    number: int


@dataclass(frozen=True)
class ModelCallFinished:
    """The model answered; tokens as reported (or estimated when not reported)."""

    number: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool


@dataclass(frozen=True)
class ToolCallStarted:
    """A tool call is about to run."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call ended."""

    call_id: str
    record: ToolCallRecord


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer, as it streams."""

    text: str


@dataclass(frozen=True)
class TurnFinished:
    """The turn is over."""

    result: TurnResult


TurnEvent = ModelCallStarted | ModelCallFinished | ToolCallStarted | ToolCallFinished | TextDelta | TurnFinished
