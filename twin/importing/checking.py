"""Checking raw rows chunk by chunk: each read as a record, its pump or sensor looked up, rows given twice refused.

The checkers are blocking and CPU only (run them through a thread) and keep state across the chunks of one file:
the keys seen so far, so a row repeating an earlier one is refused naming the earlier line. Readings, the file that
may hold millions of rows, have their own checker: what repeats from row to row (pump, sensor type and unit; a
timestamp shared by many sensors) is read once and remembered, and a reading's key is one integer.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, tzinfo
from operator import itemgetter
from typing import Any

from twin.importing import fields as f
from twin.importing.errors import BadValueError
from twin.importing.records import SPECS, Problem, Record
from twin.importing.sources import RawRow, RecordKind, RowSource
from twin.models import SensorType

# Caches of values read once per spelling; cleared when they grow past this (a file of ever-new spellings).
CACHE_LIMIT = 50_000
Checked = tuple[list[Record], list[Problem]]


class RowChecker:
    """Pumps, sensors, alarms, maintenance records and work orders: ``check`` one chunk of a file at a time."""

    def __init__(self, kind: RecordKind, zone: tzinfo | None, pumps: set[str]) -> None:
        """``pumps``: the pump ids in the registry when the file starts (rows of other pumps are refused)."""
        self._spec = SPECS[kind]
        self._zone = zone
        self._pumps = pumps
        self._pump_at = None if kind is RecordKind.PUMPS else 1 if kind in _PUMP_SECOND else 0
        self._seen: dict[tuple[Any, ...], int] = {}

    def check(self, rows: Iterable[RawRow], source: RowSource) -> Checked:
        """The chunk's rows read as records, and the rows refused (with their lines and reasons)."""
        good: list[Record] = []
        problems: list[Problem] = []
        for line, raw in rows:
            if isinstance(raw, str):
                problems.append(Problem(line, raw))
                continue
            try:
                record = self._spec.parse(source.fields(raw), self._zone)
            except BadValueError as exc:
                problems.append(Problem(line, str(exc)))
                continue
            key = self._spec.key(record)
            first = self._seen.setdefault(key, line)
            if first != line:
                problems.append(Problem(line, f"the same record as line {first} ({', '.join(map(str, key))})"))
            elif self._pump_at is not None and record[self._pump_at] not in self._pumps:
                pump = record[self._pump_at]
                problems.append(Problem(line, f"pump {pump} is not in the registry: import it in pumps.csv first"))
            else:
                good.append(record)
        return good, problems


_PUMP_SECOND = (RecordKind.ALARMS, RecordKind.WORK_ORDERS)


class ReadingChecker:
    """Readings, as rows ready to write: ``(sensor_id, recorded_at, value)``; ``touched`` names their sensors."""

    def __init__(self, zone: tzinfo | None, sensors: dict[tuple[str, str], str]) -> None:
        """``sensors``: the sensor id of each (pump id, sensor type) in the registry when the file starts."""
        self._zone = zone
        self._sensors = {pair: (sensor_id, index) for index, (pair, sensor_id) in enumerate(sensors.items())}
        self._width = len(sensors) + 1
        # (pump_id, sensor_type, unit) as spelt -> (pump id, sensor type, sensor id or None, sensor index), or why not.
        self._pairs: dict[tuple[Any, ...], tuple[str, str, str | None, int] | str] = {}
        self._stamps: dict[str, tuple[str, int]] = {}  # recorded_at as spelt -> (as stored, epoch seconds)
        self._seen: dict[int, int] = {}  # epoch * width + sensor index -> the line that gave it first
        self.touched: set[str] = set()

    def check(self, rows: Iterable[RawRow], source: RowSource) -> Checked:
        """The chunk's readings as rows to write, and the rows refused (with their lines and reasons)."""
        good: list[Record] = []
        problems: list[Problem] = []
        pairs, stamps, seen, width = self._pairs, self._stamps, self._seen, self._width
        header = source.header or ()
        # A CSV row's five values in one call, when the header has every column; else read by name.
        getter = itemgetter(*map(header.index, _PICKED)) if set(_PICKED) <= set(header) else None
        for line, raw in rows:
            if type(raw) is list and getter is not None:
                pump, kind, unit, moment, value = getter(raw)
            elif isinstance(raw, str):
                problems.append(Problem(line, raw))
                continue
            else:
                fields = source.fields(raw)
                pump, kind, unit, moment, value = (fields.get(name) for name in _PICKED)
            spelt = (pump, kind, unit)
            try:
                pair, cacheable = pairs.get(spelt), True
            except TypeError:  # a JSON list or object where text belongs
                pair, cacheable = None, False
            if pair is None:
                pair = self._pair(source.fields(raw))
                if cacheable:
                    if len(pairs) >= CACHE_LIMIT:
                        pairs.clear()
                    pairs[spelt] = pair
            if isinstance(pair, str):
                problems.append(Problem(line, pair))
                continue
            stamp = stamps.get(moment) if type(moment) is str else None
            try:
                if stamp is None:
                    stamp = self._stamp(source.fields(raw))
                # The common case without a call: decimal text or a JSON number (a bool is neither) that is finite.
                number = float(value) if type(value) in _NUMBER_TYPES else None
                if number is None or number - number != 0:
                    number = f.number(source.fields(raw), "value")
            except (BadValueError, ValueError) as exc:
                reason = str(exc) if isinstance(exc, BadValueError) else _number_reason(source.fields(raw))
                problems.append(Problem(line, reason))
                continue
            pump_id, sensor_type, sensor_id, index = pair
            if sensor_id is None:
                problems.append(
                    Problem(line, f"pump {pump_id} has no {sensor_type} sensor: import it in sensors.csv first")
                )
                continue
            first = seen.setdefault(stamp[1] * width + index, line)
            if first != line:
                problems.append(
                    Problem(line, f"the same record as line {first} ({pump_id}, {sensor_type}, {stamp[0]})")
                )
                continue
            good.append((sensor_id, stamp[0], number))
        return good, problems

    def _pair(self, fields: dict[str, Any]) -> tuple[str, str, str | None, int] | str:
        """Pump, sensor type and unit read once per spelling; the sensor looked up; or why the row is refused."""
        try:
            sensor_type = f.choice(fields, "sensor_type", SensorType)
            f.unit(fields, sensor_type)
            pump_id = f.pump_id(fields)
        except BadValueError as exc:
            return str(exc)
        sensor_id, index = self._sensors.get((pump_id, sensor_type.value), (None, -1))
        if sensor_id is not None:
            self.touched.add(sensor_id)
        return pump_id, sensor_type.value, sensor_id, index

    def _stamp(self, fields: dict[str, Any]) -> tuple[str, int]:
        """recorded_at as stored and in epoch seconds, remembered by spelling (many sensors share a moment)."""
        stored = f.timestamp(fields, "recorded_at", self._zone)
        assert stored is not None
        stamp = (stored, int(datetime.fromisoformat(stored).timestamp()))
        raw = fields.get("recorded_at")
        if type(raw) is str:
            if len(self._stamps) >= CACHE_LIMIT:
                self._stamps.clear()
            self._stamps[raw] = stamp
        return stamp


_NUMBER_TYPES = (str, float, int)
_PICKED = ("pump_id", "sensor_type", "unit", "recorded_at", "value")


def _number_reason(fields: dict[str, Any]) -> str:
    """Why ``value`` is not a number, in `fields.number`'s words."""
    try:
        f.number(fields, "value")
    except BadValueError as exc:
        return str(exc)
    return f"value must be a number, got {fields.get('value')!r}"
