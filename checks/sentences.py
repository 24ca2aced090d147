"""Sentences code writes from the evidence, one per fact, every number and id copied from the tool results.

Two answers are written with them: the answer that replaces one that failed its checks twice
(`checks.fallback`), and the structured answer, where the model only picks the facts (`checks.structured`).
Numbers are written as the results give them (``9.4``, ``1650`` for ``1650.0``), never rounded or converted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from checks.evidence import Action, AlarmFact, Passage, Reading, Trend, ZoneFact

__all__ = [
    "NOTHING_DONE",
    "action_sentence",
    "alarm_phrase",
    "alarm_sentence",
    "failure_sentence",
    "number",
    "overview_sentence",
    "passage_sentence",
    "pump_sentence",
    "reading_sentence",
    "stale_phrase",
    "trend_sentence",
    "work_order_sentence",
    "zone_sentence",
]

NOTHING_DONE = (
    "No action was carried out in this turn. Approving parked actions is a supervisor's decision "
    "(`pumpops approvals`), and nothing here starts, stops or resets equipment."
)
PASSAGE_CHARS = 500
"""A cited manual passage is quoted up to about this many characters, cut at a sentence's end where one is near."""

_SPACES = re.compile(r"\s+")


def number(value: float) -> str:
    """A number as the results give it: ``9.4``, ``1650`` for ``1650.0``, no exponent for large values."""
    return f"{value:.10g}" if abs(value) < 1e10 else f"{value:.0f}"


def action_sentence(action: Action) -> str:
    """A write of the turn: executed, submitted for approval (with its approval id), or not carried out."""
    approval = f" (approval {action.approval_id})" if action.approval_id else ""
    subject = f" for {', '.join(action.records)}" if action.records else ""
    if action.executed:
        return f"Executed: {action.tool}{subject}{approval}."
    if action.parked:
        return (
            f"Submitted for a supervisor's approval, not yet carried out: {action.tool}{approval}. "
            "A supervisor decides it with `pumpops approvals`."
        )
    return f"Not carried out: {action.tool} ({action.status})."


def stale_phrase(recorded_at: str | None) -> str:
    """What a stale value is given with: ``last reading at 2026-12-06 10:00 UTC, stale`` (or just ``stale``)."""
    at = _timestamp(recorded_at)
    return f"last reading at {at}, stale" if at else "stale"


def zone_sentence(zone: ZoneFact) -> str:
    """A pump's ISO 10816-3 zone with its vibration and the zone's meaning (a stale one's with its time)."""
    value = f"vibration {number(zone.value_mm_s)} mm/s, " if zone.value_mm_s is not None else ""
    stale = f" ({stale_phrase(zone.stale_at)})" if zone.stale_at is not None else ""
    return f"{zone.pump}: {value}ISO 10816-3 zone {zone.zone.value} ({zone.meaning}){stale}."


def alarm_phrase(alarm: AlarmFact) -> str:
    """``ALM-0001 (critical) on PUMP-007, vibration``; a fleet count as `AlarmFact.describe` gives it."""
    if alarm.alarm_id is None:
        return alarm.describe()
    on = f" on {alarm.pump}" if alarm.pump else ""
    what = f", {_words(alarm.quantity)}" if alarm.quantity else ""
    return f"{alarm.alarm_id} ({alarm.severity}){on}{what}"


def alarm_sentence(alarm: AlarmFact, message: str | None = None) -> str:
    """One alarm as a sentence, active or cleared, with its message as the results give it."""
    state = "Active alarm" if alarm.active else "Cleared alarm"
    said = f": {_clean(message).rstrip('.')}" if message else ""
    return f"{state} {alarm_phrase(alarm)}{said}."


def reading_sentence(reading: Reading) -> str:
    """A reading with unit and alarm threshold, e.g. ``PUMP-007 bearing temperature: 81 °C (alarm threshold 85)``."""
    unit = f" {reading.unit}" if reading.unit else ""
    threshold = f" (alarm threshold {number(reading.threshold)})" if reading.threshold is not None else ""
    pump = f"{reading.pump} " if reading.pump else ""
    stale = f", {stale_phrase(reading.recorded_at)}" if reading.stale else ""
    return f"{pump}{_words(reading.quantity)}: {number(reading.value)}{unit}{threshold}{stale}."


def trend_sentence(trend: Trend) -> str:
    """A sensor's trend over its window: latest, range, slope, and the projection against its alarm threshold."""
    unit = f" {trend.unit}" if trend.unit else ""
    window = f" over {trend.window_days} days" if trend.window_days is not None else ""
    parts = []
    if trend.latest is not None:
        stale = f" ({stale_phrase(trend.stale_at)})" if trend.stale_at is not None else ""
        parts.append(f"latest {number(trend.latest)}{unit}{stale}")
    if trend.minimum is not None and trend.maximum is not None:
        parts.append(f"between {number(trend.minimum)} and {number(trend.maximum)}")
    if trend.slope_per_day is not None:
        parts.append(f"changing {number(trend.slope_per_day)}{unit} a day")
    projection = _words(trend.projection) if trend.projection else ""
    if trend.threshold is not None and projection:
        projection += f" (alarm threshold {number(trend.threshold)})"
    if trend.crossing_date:
        projection += f", projected on {trend.crossing_date}"
    if trend.days_until_crossing is not None:
        projection += f", in {number(trend.days_until_crossing)} days"
    if projection:
        parts.append(projection)
    return f"{trend.pump} {_words(trend.quantity)}{window}: {', '.join(parts) or 'no readings'}."


def pump_sentence(pump: str, fields: Mapping[str, Any]) -> str:
    """A pump's registry entry: name, place, model, status, dates, active alarm count, why it ranks worst."""
    name = f" ({fields['name']})" if _text(fields.get("name")) else ""
    where = f" at {fields['location']}" if _text(fields.get("location")) else ""
    model = f", {fields['model']}" if _text(fields.get("model")) else ""
    facts = []
    for key, label in (
        ("status", "status"),
        ("installed_on", "installed on"),
        ("last_maintenance_on", "last maintenance on"),
        ("highest_active_severity", "highest active alarm severity"),
    ):
        if _text(fields.get(key)):
            facts.append(f"{label} {fields[key]}")
    count = fields.get("active_alarms")
    if isinstance(count, int) and not isinstance(count, bool):
        facts.append(f"{count} active alarm{'' if count == 1 else 's'}")
    said = f": {', '.join(facts)}" if facts else ""
    return f"{pump}{name}{where}{model}{said}."


def work_order_sentence(work_order: str, fields: Mapping[str, Any]) -> str:
    """A work order: its pump, priority, status, summary, and when and by whom it was raised and approved."""
    pump = f" for {fields['pump_id']}" if _text(fields.get("pump_id")) else ""
    kind = ", ".join(str(fields[k]) for k in ("priority", "status") if _text(fields.get(k)))
    kind = f" ({kind})" if kind else ""
    summary = f": {_clean(str(fields['summary'])).rstrip('.')}" if _text(fields.get("summary")) else ""
    extra = [
        f"{label} {fields[key]}"
        for key, label in (("created_at", "created"), ("requested_by", "requested by"), ("approved_by", "approved by"))
        if _text(fields.get(key))
    ]
    return f"{work_order}{pump}{kind}{summary}{'; ' + ', '.join(extra) if extra else ''}."


def overview_sentence(subject: str, fields: Mapping[str, Any]) -> str:
    """A result's own fields (counts, filters, a fleet's tallies): ``System summary: total pumps 8; ...``."""
    parts = []
    for key, value in fields.items():
        if isinstance(value, Mapping):
            inner = ", ".join(_field(k, v) for k, v in value.items())
            if inner:
                parts.append(f"{_words(key)}: {inner}")
        else:
            parts.append(_field(key, value))
    return f"{subject}: {'; '.join(parts)}."


def passage_sentence(passage: Passage, limit: int = PASSAGE_CHARS) -> str:
    """A manual passage quoted with its source (title and section), cut near ``limit`` characters."""
    source = passage.title + (f", {passage.section}" if passage.section else "")
    return f'The manual "{source}" says: {_trimmed(_clean(passage.text), limit)}'


def failure_sentence(subject: str, text: str, limit: int = 300) -> str:
    """A call that failed, with the tool's own message (written for the reader)."""
    return f"{subject} failed: {_trimmed(_clean(text), limit)}"


def _field(key: str, value: Any) -> str:
    if value is True:
        return _words(key)
    if value is False:
        return f"not {_words(key)}"
    if isinstance(value, int | float):
        return f"{_words(key)} {number(value)}"
    return f"{_words(key)} {value}"


def _words(name: str) -> str:
    return name.replace("_", " ")


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _trimmed(text: str, limit: int) -> str:
    """``text`` whole when short, else cut at the last sentence end before ``limit`` (or a word, with "…")."""
    if len(text) <= limit:
        return text if text.endswith((".", "!", "?", "…")) else text + "."
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if end >= limit // 2:
        return cut[: end + 1]
    return cut.rsplit(" ", 1)[0] + " …"


def _timestamp(value: str | None) -> str:
    """An ISO-8601 UTC time as ``2026-12-06 10:00 UTC``; other text as it is; "" for none."""
    if not value:
        return ""
    found = re.fullmatch(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|\+00:00)", value)
    return f"{found.group(1)} {found.group(2)} UTC" if found else value
