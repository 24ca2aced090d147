"""The one MQTT shape PumpOps reads: the topic names the pump and the sensor, the payload the value and its time.

Topic: the source's pattern with its ``{pump}`` and ``{sensor}`` levels filled in, e.g.
``acme/north/station1/PUMP-007/vibration``. The pump level may be any spelling the registry reads as a pump id
(``PUMP-007``, ``pump-7``, ``P7``, ``7``); the sensor level is a sensor type exactly (``vibration``,
``bearing_temperature``, ``flow``, ``discharge_pressure``, ``motor_current``).

Payload: a JSON object ``{"value": 4.2, "timestamp": "2025-03-01T10:15:00+01:00"}``: ``value`` a finite number,
``timestamp`` ISO-8601 with its UTC offset (``Z`` or ``+01:00``). An optional ``unit`` must be the sensor type's
registry unit (or a spelling of it the importer reads, such as ``m3/h``); other keys are ignored.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any

from twin.identifiers import PUMP, canonical_record_id
from twin.importing.fields import UNIT_SPELLINGS
from twin.models import SENSOR_SPECS, SensorType
from twin.readings import Reading

PUMP_LEVEL = "{pump}"
SENSOR_LEVEL = "{sensor}"


class MalformedMessage(ValueError):
    """A message that cannot be a reading; ``reason`` is a short key (``timestamp``, ``unit``, ...)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


_KNOWN_TOPICS = 100_000


class TopicPattern:
    """A source's topic pattern (``acme/+/station1/{pump}/{sensor}``) and how a topic is read back through it."""

    def __init__(self, pattern: str) -> None:
        self._levels = pattern.split("/")
        self._pump = self._levels.index(PUMP_LEVEL)
        self._sensor = self._levels.index(SENSOR_LEVEL)
        self._known: dict[str, tuple[str, SensorType]] = {}

    @property
    def subscription(self) -> str:
        """The MQTT filter to subscribe to: the pattern with its pump and sensor levels as ``+``."""
        return "/".join("+" if level in (PUMP_LEVEL, SENSOR_LEVEL) else level for level in self._levels)

    def topic(self, pump: str, sensor: str) -> str:
        """The topic a value of ``pump``'s ``sensor`` is published on (``+`` levels left as they are)."""
        filled = {PUMP_LEVEL: pump, SENSOR_LEVEL: sensor}
        return "/".join(filled.get(level, level) for level in self._levels)

    def parse(self, topic: str) -> tuple[str, SensorType]:
        """The canonical pump id and the sensor type ``topic`` names.

        Raises:
            MalformedMessage: the topic has another shape, names no pump, or no known sensor type.
        """
        # A plant publishes on a fixed set of topics: each is read once (up to _KNOWN_TOPICS of them).
        known = self._known.get(topic)
        if known is not None:
            return known
        pump, sensor = self._read(topic)
        if len(self._known) < _KNOWN_TOPICS:
            self._known[topic] = (pump, sensor)
        return pump, sensor

    def _read(self, topic: str) -> tuple[str, SensorType]:
        levels = topic.split("/")
        if len(levels) != len(self._levels):
            raise MalformedMessage("topic", f"topic {topic!r} does not have the pattern's {len(self._levels)} levels")
        pump = canonical_record_id(levels[self._pump], PUMP)
        if pump is None:
            raise MalformedMessage("pump", f"topic {topic!r}: {levels[self._pump]!r} is not a pump id like PUMP-007")
        try:
            sensor = SensorType(levels[self._sensor])
        except ValueError:
            known = ", ".join(t.value for t in SensorType)
            raise MalformedMessage(
                "sensor", f"topic {topic!r}: {levels[self._sensor]!r} is not a sensor type; use one of {known}"
            ) from None
        return pump, sensor


def parse_payload(payload: bytes | str, pump: str, sensor: SensorType, source: str) -> Reading:
    """The reading a payload holds for ``pump``'s ``sensor``.

    Raises:
        MalformedMessage: not a JSON object, a missing or non-finite value, a timestamp without an offset, a unit
            that is not the sensor type's.
    """
    try:
        data: Any = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise MalformedMessage("not_json", "the payload is not JSON") from None
    if not isinstance(data, dict):
        raise MalformedMessage("not_object", 'the payload must be a JSON object like {"value": 4.2, "timestamp": ...}')
    value = data.get("value")
    # bool is an int to Python, but true is not a measurement.
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise MalformedMessage("value", f"value must be a finite number, got {value!r}")
    raw_time = data.get("timestamp")
    if not isinstance(raw_time, str):
        raise MalformedMessage("timestamp", f"timestamp must be ISO-8601 text with an offset, got {raw_time!r}")
    try:
        at = datetime.fromisoformat(raw_time)
    except ValueError:
        raise MalformedMessage("timestamp", f"timestamp {raw_time!r} is not ISO-8601") from None
    if at.tzinfo is None:
        raise MalformedMessage("timestamp_offset", f"timestamp {raw_time!r} has no UTC offset; add Z or +01:00")
    unit = data.get("unit")
    if unit is not None:
        expected = SENSOR_SPECS[sensor].unit
        if not isinstance(unit, str) or UNIT_SPELLINGS.get(unit.strip().lower()) != expected:
            raise MalformedMessage("unit", f"unit {unit!r} is not {sensor.value}'s unit {expected}")
    return Reading(pump_id=pump, sensor_type=sensor, value=float(value), at=at, source=source)


def payload(value: float, at: datetime, sensor: SensorType | None = None) -> bytes:
    """The payload for ``value`` measured at ``at`` (aware), with the sensor type's unit when ``sensor`` is given."""
    if at.tzinfo is None:
        raise ValueError("a payload's timestamp must carry its UTC offset")
    data: dict[str, Any] = {"value": value, "timestamp": at.isoformat()}
    if sensor is not None:
        data["unit"] = SENSOR_SPECS[sensor].unit
    return json.dumps(data, ensure_ascii=False).encode("utf-8")
