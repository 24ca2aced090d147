"""Identifier shapes and the small normalisations applied before lookup or storage."""

from __future__ import annotations

import re

from twin.errors import InvalidInputError

PUMP_ID_PATTERN = re.compile(r"^PUMP-\d{3,6}$")
ALARM_ID_PATTERN = re.compile(r"^ALM-\d{4,8}$")
MAX_ID_LENGTH = 64


def normalize_pump_id(raw: str) -> str:
    """Trim and upper-case a pump id; reject values that cannot be one.

    Raises:
        InvalidInputError: the value is empty or absurdly long.
    """
    value = raw.strip().upper()
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{raw[:80]!r} is not a pump id. Pump ids look like 'PUMP-007'. Call assets-list_pumps to see valid ids."
        )
    return value


def normalize_alarm_id(raw: str) -> str:
    """Trim and upper-case an alarm id; reject values that cannot be one.

    Raises:
        InvalidInputError: the value is empty or absurdly long.
    """
    value = raw.strip().upper()
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{raw[:80]!r} is not an alarm id. Alarm ids look like 'ALM-0007'. "
            "Call alarms-list_alarms to see valid ids."
        )
    return value


def escape_like(value: str) -> str:
    r"""Escape LIKE wildcards so user text matches literally (use with ``ESCAPE '\'``)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def trimmed_text(raw: str, *, name: str, minimum: int, maximum: int, example: str, describing: str = "") -> str:
    """``raw`` trimmed, refused unless ``minimum``-``maximum`` characters long.

    Raises:
        InvalidInputError: too short or too long; the message names ``name``, the bounds and ``example``.
    """
    text = raw.strip()
    if not minimum <= len(text) <= maximum:
        raise InvalidInputError(f"{name} must be {minimum}-{maximum} characters{describing}, e.g. '{example}'.")
    return text
