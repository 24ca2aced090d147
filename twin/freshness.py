"""When a sensor's latest value is stale: older than `Telemetry.StaleAfterSeconds` at the moment it is asked for.

Every result that shows a latest value marks a stale one with ``"stale": true`` and its ``age_seconds`` (both
absent on a fresh value, so results stay compact), and carries a ``stale_note`` telling the reader not to present
it as current. The time "now" comes from a clock the composition root passes in (tests pass their own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import Field

from twin.timestamps import parse_ts

__all__ = ["STALE_FIELD", "Clock", "Staleness", "stale_field", "utc_now"]

Clock = Callable[[], datetime]
"""Returns the current time, timezone-aware."""


def utc_now() -> datetime:
    """The current time in UTC (the production clock)."""
    return datetime.now(UTC)


def _absent_when_none(value: Any) -> bool:
    return value is None


def stale_field() -> Any:
    """A result field shown only when set: ``stale``, ``age_seconds`` and ``stale_note`` of a fresh value are absent."""
    return Field(default=None, exclude_if=_absent_when_none)


STALE_FIELD = "stale"
"""The result field that marks a stale value (``true``); the answer checks read it (`checks.evidence`)."""


@dataclass(frozen=True)
class Staleness:
    """The rule of `Telemetry.StaleAfterSeconds`: a value recorded more than ``after_seconds`` before ``clock()``.

    ``after_seconds`` None marks nothing stale.
    """

    after_seconds: float | None = None
    clock: Clock = field(default=utc_now)

    def age(self, recorded_at: str | None) -> int | None:
        """The age in whole seconds of a value recorded at ``recorded_at`` (ISO-8601) if it is stale, else None.

        A missing or unreadable time is not judged (None).
        """
        if self.after_seconds is None or not recorded_at:
            return None
        try:
            at = parse_ts(recorded_at)
        except ValueError:
            return None
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)  # the registry stores UTC
        age = (self.clock() - at).total_seconds()
        return int(age) if age > self.after_seconds else None

    def note(self, stale: int) -> str | None:
        """The note a result carries when ``stale`` of its values are stale; None when none is."""
        if not stale or self.after_seconds is None:
            return None
        values = "value is" if stale == 1 else "values are"
        return (
            f"{stale} {values} stale (no new reading for over {_spoken(self.after_seconds)}; see age_seconds): "
            "do not present a stale value as current; give it with its reading time and say it is stale."
        )


def _spoken(seconds: float) -> str:
    """``seconds`` as the note gives it: in seconds, and in whole minutes or hours beside when it is one.

    An answer may restate the stale age as an operator says it ("over 15 minutes"); the answer checks do no
    arithmetic, so the result carries that form too.
    """
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds:g} s ({seconds / 3600:g} h)"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds:g} s ({seconds / 60:g} min)"
    return f"{seconds:g} s"
