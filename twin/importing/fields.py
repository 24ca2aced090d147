"""Reading one field of an imported row: ids, numbers, closed sets, units, dates and timestamps.

Each function returns the value as stored, or raises `BadValueError` saying what is wrong and what is accepted.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, tzinfo
from enum import Enum
from typing import Any, TypeVar

from twin.identifiers import ALARM, ALARM_ID_PATTERN, PUMP, PUMP_ID_PATTERN, WORK_ORDER, canonical_record_id
from twin.importing.errors import BadValueError
from twin.models import SENSOR_SPECS, SensorType
from twin.timestamps import format_ts

E = TypeVar("E", bound=Enum)

WORK_ORDER_ID_PATTERN = re.compile(r"^WO-\d{4,8}$")

MAX_TEXT = 2000
# Other spellings of the registry's units, read as the registry's own.
UNIT_SPELLINGS: dict[str, str] = {
    "mm/s": "mm/s",
    "°c": "°C",
    "degc": "°C",
    "deg c": "°C",
    "c": "°C",
    "m³/h": "m³/h",
    "m3/h": "m³/h",
    "m^3/h": "m³/h",
    "bar": "bar",
    "a": "A",
    "amp": "A",
    "amps": "A",
}


def text(fields: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    """A trimmed text field; None when empty and not required."""
    value = fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadValueError(f"{name} is missing")
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise BadValueError(f"{name} must be text, got {value!r}")
    result = str(value).strip()
    if len(result) > MAX_TEXT:
        raise BadValueError(f"{name} is {len(result)} characters long; at most {MAX_TEXT}")
    return result


def required(fields: dict[str, Any], name: str) -> str:
    """A trimmed text field that must be present."""
    value = text(fields, name)
    assert value is not None  # required=True never returns None
    return value


def pump_id(fields: dict[str, Any], name: str = "pump_id") -> str:
    """A pump id in the registry's form ``PUMP-`` and 3-6 digits; spellings such as ``pump 7`` become ``PUMP-007``."""
    raw = required(fields, name)
    canonical = canonical_record_id(raw, PUMP)
    if canonical is None or not PUMP_ID_PATTERN.match(canonical):
        raise BadValueError(
            f"{name} {raw!r} is not a pump id: ids have the form PUMP- and 3 to 6 digits, e.g. PUMP-007 "
            "('pump 7' and '7' are read as PUMP-007)"
        )
    return canonical


def alarm_id(fields: dict[str, Any]) -> str:
    """An alarm id in the registry's form ``ALM-`` and 4-8 digits (``alarm 3`` is ``ALM-0003``)."""
    raw = required(fields, "alarm_id")
    canonical = canonical_record_id(raw, ALARM)
    if canonical is None or not ALARM_ID_PATTERN.match(canonical):
        raise BadValueError(f"alarm_id {raw!r} is not an alarm id: ids have the form ALM- and 4 to 8 digits")
    return canonical


def work_order_id(fields: dict[str, Any]) -> str:
    """A work order id in the registry's form ``WO-`` and 4-8 digits (``WO12``, ``work order 12``: ``WO-0012``)."""
    raw = required(fields, "work_order_id")
    canonical = canonical_record_id(raw, WORK_ORDER)
    if canonical is None or not WORK_ORDER_ID_PATTERN.match(canonical):
        raise BadValueError(
            f"work_order_id {raw!r} is not a work order id: ids have the form WO- and 4 to 8 digits, e.g. WO-0012"
        )
    return canonical


def number(fields: dict[str, Any], name: str, *, optional: bool = False) -> float | None:
    """A finite number (a JSON number or decimal text with a point)."""
    value = fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if optional:
            return None
        raise BadValueError(f"{name} is missing")
    if isinstance(value, bool):
        raise BadValueError(f"{name} must be a number, got {value!r}")
    try:
        result = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise BadValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(result):
        raise BadValueError(f"{name} must be a finite number, got {value!r}")
    return result


def whole(fields: dict[str, Any], name: str, *, allowed: tuple[int, ...] | None = None) -> int:
    """A positive whole number, optionally one of ``allowed``."""
    value = number(fields, name)
    assert value is not None
    if not value.is_integer() or value <= 0 or (allowed is not None and int(value) not in allowed):
        accepted = " or ".join(map(str, allowed)) if allowed else "a positive whole number"
        raise BadValueError(f"{name} must be {accepted}, got {fields.get(name)!r}")
    return int(value)


def choice(fields: dict[str, Any], name: str, enum: type[E], *, default: E | None = None) -> E:
    """A member of a closed set, case-insensitive; ``default`` when empty."""
    raw = text(fields, name, required=default is None)
    if raw is None:
        assert default is not None
        return default
    wanted = raw.lower().replace(" ", "_").replace("-", "_")
    for member in enum:
        if member.value == wanted:
            return member
    raise BadValueError(f"{name} {raw!r} is not one of {', '.join(str(m.value) for m in enum)}")


def unit(fields: dict[str, Any], sensor_type: SensorType) -> str:
    """The registry's unit for ``sensor_type``; another unit, or one unknown, is refused naming the known ones."""
    raw = required(fields, "unit")
    stored = SENSOR_SPECS[sensor_type].unit
    if UNIT_SPELLINGS.get(raw.lower()) == stored:
        return stored
    known = ", ".join(f"{spec.unit} ({kind.value})" for kind, spec in SENSOR_SPECS.items())
    if raw.lower() in UNIT_SPELLINGS:
        raise BadValueError(f"unit {raw!r} does not measure {sensor_type.value}, which is in {stored}")
    raise BadValueError(
        f"unknown unit {raw!r} for {sensor_type.value}; the known units are {known}: convert to {stored}"
    )


def day(fields: dict[str, Any], name: str, *, optional: bool = False) -> str | None:
    """A calendar date as ``YYYY-MM-DD``."""
    raw = text(fields, name, required=not optional)
    if raw is None:
        return None
    try:
        return date.fromisoformat(raw).isoformat()
    except ValueError:
        raise BadValueError(f"{name} {raw!r} is not a date like 2024-03-31") from None


def timestamp(fields: dict[str, Any], name: str, zone: tzinfo | None, *, optional: bool = False) -> str | None:
    """A moment as stored (UTC, ``YYYY-MM-DDTHH:MM:SSZ``) from ISO 8601 with an offset, or local time in ``zone``."""
    raw = text(fields, name, required=not optional)
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise BadValueError(f"{name} {raw!r} is not a timestamp like 2026-03-31T14:00:00+02:00") from None
    if moment.tzinfo is None:
        if zone is None:
            raise BadValueError(
                f"{name} {raw!r} has no UTC offset: write it like {raw}+01:00 or {raw}Z, or name the site's "
                "time zone (--time-zone Europe/Berlin)"
            )
        moment = moment.replace(tzinfo=zone)
    return format_ts(moment)
