"""The registry's one timestamp form: UTC, whole seconds, ``YYYY-MM-DDTHH:MM:SSZ``.

Every stored time is written in it, so stored times compare as text in their order of time.
"""

from __future__ import annotations

from datetime import UTC, datetime

STORED_FORM = "%Y-%m-%dT%H:%M:%SZ"


def format_ts(value: datetime) -> str:
    """An aware time as the registry stores it (sub-second parts dropped)."""
    return value.astimezone(UTC).strftime(STORED_FORM)


def parse_ts(value: str) -> datetime:
    """A stored time (or any ISO-8601 text with its offset) as an aware datetime.

    Raises:
        ValueError: the text is not ISO-8601.
    """
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
