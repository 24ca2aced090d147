"""What a turn's tool results show, parsed once: the one structure every answer check reads.

The runner adds each tool result as it arrives (`Evidence.add`); `parse_result` is the only place a result's JSON
is read, once per result. From the parsed value the evidence keeps, typed:

* ``records``: every object that carries a record id (pump, alarm, work order, approval), its scalar fields by
  the canonical id (``PUMP-007``); an object's own id is its most specific one (an alarm object names a pump too);
* ``readings``: every numeric ``value`` (a trend's ``latest``) with its pump, measurement (``sensor_type``), unit,
  time, alarm threshold and ISO zone, each taken from the object or the nearest enclosing one that gives it;
* ``alarms``: every object with an ``alarm_id`` and a severity, active unless marked ``"active": false``, with
  its pump, and the fleet summary's ``active_alarms_by_severity`` counts;
* ``zones``: each pump's ISO 10816-3 vibration zone, from the results' zone fields (``vibration_zone``,
  ``iso_zone``), else computed by `twin.iso10816.assess` from its vibration and its machine group and foundation;
* ``actions``: every write of the turn, executed (status ``ok``) or parked (``pending_approval`` with its approval
  id), named by its tool, with the record ids its result gives;
* ``passages``: manual passages (title, section, similarity score, text);
* ``trends``: every sensor trend (an object with a ``slope_per_day`` or a ``projection``): its pump, measurement,
  window, latest value, range, slope and projection against the alarm threshold;
* ``stale_values``: every latest value an object marks ``"stale": true`` (older than `Telemetry.StaleAfterSeconds`,
  `twin.freshness`): its ``value`` or ``latest`` (and their unit conversions, ``value_psi``) or the fleet summary's
  ``vibration_mm_s``, with its pump, measurement, time and age. The readings, trends and zones of a stale value are
  marked ``stale`` too, so the sentences code writes of them say so (`checks.sentences`).

Text that is not JSON stays text: the checks read it as prose.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from checks.vocabulary import SEVERITIES
from governance import APPROVAL_ID
from governance.effects import Effect
from twin.freshness import STALE_FIELD
from twin.identifiers import canonical_record_id
from twin.iso10816 import ZONE_MEANING, Zone, assess
from twin.models import Foundation

__all__ = [
    "ID_FIELDS",
    "STALE_VALUE_FIELDS",
    "Action",
    "AlarmFact",
    "Evidence",
    "Passage",
    "Reading",
    "ToolResult",
    "Trend",
    "ZoneFact",
    "canonical_id",
    "parse_result",
]

ID_FIELDS = ("alarm_id", "work_order_id", "approval_id", "pump_id")
"""The fields that name a record, most specific first (an alarm object names a pump too)."""
STALE_VALUE_FIELDS = {"value": None, "latest": None, "vibration_mm_s": "vibration"}
"""The fields of an object marked stale that hold its stale value (a ``value_psi`` beside ``value`` too), with the
measurement a field names itself (else the object's ``sensor_type``)."""
_UNIT_OF = {"vibration_mm_s": "mm/s"}
_NOT_JSON = object()


def parse_result(text: str) -> Any:
    """The JSON value of a tool result, or `NOT_JSON` for plain text: the one parse of a result per turn."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def canonical_id(value: str) -> str:
    """A record id in the registry's form (``pump 7`` is ``PUMP-007``: `canonical_record_id`); else upper-cased."""
    return canonical_record_id(value) or value.strip().upper()


@dataclass(frozen=True)
class ToolResult:
    """One tool result as the turn received it: its tool, its call status, its text and parsed JSON."""

    tool: str
    status: str
    effect: Effect
    text: str
    data: Any = None
    is_json: bool = False


@dataclass(frozen=True)
class Reading:
    """A measured value a result gives, with what it belongs to."""

    pump: str | None
    quantity: str
    value: float
    unit: str | None = None
    recorded_at: str | None = None
    threshold: float | None = None
    zone: str | None = None
    stale: bool = False
    """The result marks the value stale: older than `Telemetry.StaleAfterSeconds`, not current."""
    age_seconds: float | None = None


@dataclass(frozen=True)
class AlarmFact:
    """An alarm a result lists (``alarm_id`` None: a count from the fleet summary)."""

    severity: str
    pump: str | None
    alarm_id: str | None
    quantity: str | None = None
    count: int = 1
    active: bool = True

    def describe(self) -> str:
        """``"ALM-0001 (critical on PUMP-007)"``, or ``"1 high active alarm (fleet summary)"`` for a count."""
        if self.alarm_id is None:
            plural = "s" if self.count != 1 else ""
            return f"{self.count} {self.severity} active alarm{plural} (fleet summary)"
        on = f" on {self.pump}" if self.pump else ""
        return f"{self.alarm_id} ({self.severity}{on})"


@dataclass(frozen=True)
class ZoneFact:
    """A pump's ISO 10816-3 vibration zone and what the zone means."""

    pump: str
    zone: Zone
    value_mm_s: float | None
    meaning: str
    computed: bool = False
    stale_at: str | None = None
    """The time of the stale vibration the zone is judged from ("" when the results give none); None: not stale."""


@dataclass(frozen=True)
class Action:
    """A write of the turn: executed, parked for approval, or refused."""

    tool: str
    status: str
    approval_id: str | None
    records: tuple[str, ...] = ()

    @property
    def executed(self) -> bool:
        """Whether the write ran (not parked, refused or failed)."""
        return self.status == "ok"

    @property
    def parked(self) -> bool:
        """Whether the write waits on a supervisor's approval."""
        return self.status == "pending_approval"


@dataclass(frozen=True)
class Passage:
    """A manual passage a search returned."""

    title: str
    section: str | None
    score: float
    text: str


@dataclass(frozen=True)
class Trend:
    """A sensor's trend over a window, with its projection against the alarm threshold."""

    pump: str
    quantity: str
    unit: str | None
    window_days: int | None
    latest: float | None
    minimum: float | None
    maximum: float | None
    slope_per_day: float | None
    threshold: float | None
    projection: str | None
    crossing_date: str | None
    days_until_crossing: float | None
    stale_at: str | None = None
    """The time of the stale ``latest`` value ("" when the results give none); None: not stale."""


@dataclass
class Evidence:
    """The typed facts of one turn's tool results (see the module docstring)."""

    results: list[ToolResult] = field(default_factory=list)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    readings: list[Reading] = field(default_factory=list)
    alarm_list: dict[str, AlarmFact] = field(default_factory=dict)
    alarm_counts: dict[str, int] = field(default_factory=dict)
    zones: dict[str, ZoneFact] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    trends: list[Trend] = field(default_factory=list)
    stale_values: list[Reading] = field(default_factory=list)

    @classmethod
    def of(cls, texts: Iterable[str]) -> Evidence:
        """Evidence of read results given as texts (for callers outside a turn, and tests)."""
        evidence = cls()
        for text in texts:
            evidence.add("", text)
        return evidence

    @property
    def texts(self) -> list[str]:
        """Every result's text, in the order added."""
        return [r.text for r in self.results]

    def add(self, tool: str, text: str, *, status: str = "ok", effect: Effect = Effect.READ) -> ToolResult:
        """Parse one tool result (once) and file its facts; returns it with its parsed value."""
        data = parse_result(text)
        is_json = data is not _NOT_JSON
        result = ToolResult(tool, status, effect, text, data if is_json else None, is_json)
        self.results.append(result)
        if is_json and status not in {"error", "rejected"}:
            self._file(data)
        if effect is Effect.WRITE:
            payload = data if isinstance(data, dict) else {}
            approval = payload.get("approval_id")
            ids = tuple(canonical_id(str(payload[k])) for k in ID_FIELDS if isinstance(payload.get(k), str))
            valid = approval if isinstance(approval, str) and APPROVAL_ID.fullmatch(approval) else None
            self.actions.append(Action(tool, status, valid, ids))
        return result

    def active_alarms(self) -> list[AlarmFact]:
        """Active listed alarms, then the summary's counts that no listed alarm accounts for, most severe first."""
        alarms = [a for a in self.alarm_list.values() if a.active]
        for severity in (s for s in SEVERITIES if s in self.alarm_counts):
            unlisted = self.alarm_counts[severity] - sum(1 for a in alarms if a.severity == severity)
            if unlisted > 0:
                alarms.append(AlarmFact(severity=severity, pump=None, alarm_id=None, count=unlisted))
        return sorted(alarms, key=lambda a: SEVERITIES.index(a.severity))

    def values_of(self, pump: str, quantity: str) -> set[float]:
        """Every value the results give of ``pump``'s ``quantity``."""
        return {r.value for r in self.readings if r.pump == pump and r.quantity == quantity}

    def _file(self, data: Any) -> None:
        for node, context in _objects(data):
            own = next((k for k in ID_FIELDS if isinstance(node.get(k), str) and node[k].strip()), None)
            if own is not None:
                scalars = {k: v for k, v in node.items() if not isinstance(v, dict | list)}
                self.records.setdefault(canonical_id(node[own]), {}).update(scalars)
            self._file_alarm(node, context)
            self._file_reading(node, context)
            self._file_zone(node, context)
            self._file_passage(node)
            self._file_trend(node, context)
            self._file_stale(node, context)
            counts = node.get("active_alarms_by_severity")
            if isinstance(counts, dict):
                for severity, count in counts.items():
                    name = str(severity).lower()
                    if name in SEVERITIES and isinstance(count, int) and not isinstance(count, bool) and count > 0:
                        self.alarm_counts[name] = max(self.alarm_counts.get(name, 0), count)
        self._compute_zones()
        self._mark_stale_zones()

    def _file_alarm(self, node: dict[str, Any], context: dict[str, Any]) -> None:
        alarm_id, severity = node.get("alarm_id"), node.get("severity")
        if not (isinstance(alarm_id, str) and isinstance(severity, str) and severity.lower() in SEVERITIES):
            return
        pump = context.get("pump_id")
        alarm = AlarmFact(
            severity=severity.lower(),
            pump=canonical_id(pump) if isinstance(pump, str) else None,
            alarm_id=alarm_id,
            quantity=context.get("sensor_type"),
            active=node.get("active", True) is not False,
        )
        key = canonical_id(alarm_id)
        if key not in self.alarm_list or (alarm.active and not self.alarm_list[key].active):
            self.alarm_list[key] = alarm  # an active listing wins

    def _file_reading(self, node: dict[str, Any], context: dict[str, Any]) -> None:
        pump, quantity = context.get("pump_id"), context.get("sensor_type")
        if not isinstance(quantity, str):
            return
        for key in ("value", "latest"):
            value = node.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                threshold = context.get("alarm_threshold")
                self.readings.append(
                    Reading(
                        pump=canonical_id(pump) if isinstance(pump, str) else None,
                        quantity=quantity,
                        value=float(value),
                        unit=_text(context.get("unit")),
                        recorded_at=_text(context.get("recorded_at") or context.get("raised_at")),
                        threshold=float(threshold) if isinstance(threshold, int | float) else None,
                        zone=_text(node.get("iso_zone")),
                        stale=node.get(STALE_FIELD) is True,
                        age_seconds=_number(node.get("age_seconds")),
                    )
                )

    def _file_zone(self, node: dict[str, Any], context: dict[str, Any]) -> None:
        pump = context.get("pump_id")
        if not isinstance(pump, str):
            return
        zoned = node.get("vibration_zone")
        letter, value = None, None
        if isinstance(zoned, dict):
            letter, value = zoned.get("zone"), zoned.get("value_mm_s")
        elif context.get("sensor_type") == "vibration" and isinstance(node.get("iso_zone"), str):
            letter, value = node.get("iso_zone"), node.get("value")
        if isinstance(letter, str) and letter.upper() in Zone.__members__:
            zone = Zone(letter.upper())
            number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
            self.zones[canonical_id(pump)] = ZoneFact(canonical_id(pump), zone, number, ZONE_MEANING[zone])

    def _file_passage(self, node: dict[str, Any]) -> None:
        title, text, score = node.get("title"), node.get("text"), node.get("score")
        if isinstance(title, str) and isinstance(text, str) and isinstance(score, int | float):
            self.passages.append(Passage(title, _text(node.get("section")), float(score), text))

    def _file_trend(self, node: dict[str, Any], context: dict[str, Any]) -> None:
        pump, quantity = context.get("pump_id"), context.get("sensor_type")
        if not ("slope_per_day" in node or "projection" in node) or not (isinstance(pump, str) and quantity):
            return
        window = node.get("window_days")
        self.trends.append(
            Trend(
                pump=canonical_id(pump),
                quantity=str(quantity),
                unit=_text(context.get("unit")),
                window_days=window if isinstance(window, int) and not isinstance(window, bool) else None,
                latest=_number(node.get("latest")),
                minimum=_number(node.get("min")),
                maximum=_number(node.get("max")),
                slope_per_day=_number(node.get("slope_per_day")),
                threshold=_number(context.get("alarm_threshold")),
                projection=_text(node.get("projection")),
                crossing_date=_text(node.get("projected_crossing_date")),
                days_until_crossing=_number(node.get("days_until_crossing")),
                stale_at=(_text(node.get("window_end")) or "") if node.get(STALE_FIELD) is True else None,
            )
        )

    def _file_stale(self, node: dict[str, Any], context: dict[str, Any]) -> None:
        if node.get(STALE_FIELD) is not True:
            return
        pump = context.get("pump_id")
        for key, value in node.items():
            name = next((f for f in STALE_VALUE_FIELDS if key == f or key.startswith(f + "_")), None)
            number = _number(value)
            if name is None or number is None:
                continue
            quantity = STALE_VALUE_FIELDS[name] or context.get("sensor_type")
            self.stale_values.append(
                Reading(
                    pump=canonical_id(pump) if isinstance(pump, str) else None,
                    quantity=str(quantity or "value"),
                    value=number,
                    unit=(_text(context.get("unit")) or _UNIT_OF.get(name)) if key == name else key[len(name) + 1 :],
                    recorded_at=_text(node.get("recorded_at") or node.get("window_end")),
                    threshold=_number(context.get("alarm_threshold")) if key == name else None,
                    stale=True,
                    age_seconds=_number(node.get("age_seconds")),
                )
            )

    def _mark_stale_zones(self) -> None:
        """A zone judged from a stale vibration is stale too."""
        for pump, zone in list(self.zones.items()):
            stale = next((r for r in self.stale_values if r.pump == pump and r.quantity == "vibration"), None)
            if stale is not None and zone.stale_at is None and zone.value_mm_s in {None, stale.value}:
                self.zones[pump] = replace(zone, stale_at=stale.recorded_at or "")

    def _compute_zones(self) -> None:
        """Zones the results do not give, from a pump's latest vibration and its machine group and foundation."""
        for pump, fields in self.records.items():
            if pump in self.zones or not pump.startswith("PUMP-"):
                continue
            group, foundation = fields.get("machine_group"), fields.get("foundation")
            values = self.values_of(pump, "vibration")
            if not isinstance(group, int) or foundation not in {f.value for f in Foundation} or len(values) != 1:
                continue
            try:
                found = assess(next(iter(values)), group, Foundation(foundation))
            except ValueError:
                continue  # a machine group the table does not hold
            self.zones[pump] = ZoneFact(pump, found.zone, found.value_mm_s, found.meaning, computed=True)


def _objects(data: Any) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Every object of a parsed result, with its context: the scalar fields it and its enclosing objects give.

    The nearest object's field wins, so a reading inside a pump's details takes the pump's id and its own unit.
    Objects come in document order.
    """
    stack: list[tuple[Any, dict[str, Any]]] = [(data, {})]
    while stack:
        node, outer = stack.pop()
        if isinstance(node, dict):
            context = {**outer, **{k: v for k, v in node.items() if not isinstance(v, dict | list) and v is not None}}
            yield node, context
            children = [child for child in node.values() if isinstance(child, dict | list)]
            stack.extend((child, context) for child in reversed(children))
        elif isinstance(node, list):
            stack.extend((child, outer) for child in reversed(node))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
