"""The answer code builds from the evidence when the model's answer failed its checks twice.

It says plainly what the turn's results show, nothing more: the writes executed and those parked for approval
(with their approval ids), or that nothing was done; each pump's vibration zone of C or worse with its value,
unit and the zone's meaning from the ISO table; the active alarms, most severe first; the readings of the pumps
a comparison named; the stale values an answer gave as current, each with its reading time and marked stale.
Every number and id in it is copied from the results, so it passes the checks it replaces.
"""

from __future__ import annotations

from collections.abc import Sequence

from checks.evidence import Evidence, Reading, canonical_id
from checks.record_ids import RECORD_ID
from checks.review import Finding
from checks.sentences import NOTHING_DONE, action_sentence, alarm_phrase, reading_sentence, zone_sentence
from twin.iso10816 import Zone

__all__ = ["evidence_answer"]

_MAX_ALARMS = 8
_MAX_READINGS = 6
_MAX_RECORDS = 12


def evidence_answer(evidence: Evidence, findings: Sequence[Finding], question: str) -> str:
    """What the results show, as plain sentences, in place of an answer that ``findings`` stopped."""
    checks = {f.check for f in findings}
    lines = ["The model's answer did not match this turn's tool results, so here is what they show."]
    lines += _actions(evidence, told_nothing="unbacked_actions" in checks)
    lines += _zones(evidence)
    lines += _alarms(evidence)
    if checks & {"misstated_comparisons", "ungrounded_numbers"}:
        lines += [reading_sentence(r) for r in _readings(evidence, [question, *(f.finding for f in findings)])]
    if "stale_readings" in checks:
        lines += [reading_sentence(r) for r in _stale(evidence)]
    if len(lines) == 1:
        lines += _ran(evidence)
    return "\n".join(lines)


def _ran(evidence: Evidence) -> list[str]:
    """The tools run and the records their results hold: what is left to say when nothing else applies."""
    ran = sorted({r.tool for r in evidence.results if r.tool})
    if not ran:
        return ["No tool ran in this turn."]
    ids = list(evidence.records)
    more = f" and {len(ids) - _MAX_RECORDS} more" if len(ids) > _MAX_RECORDS else ""
    held = [f"Records in their results: {', '.join(ids[:_MAX_RECORDS])}{more}."] if ids else []
    return [f"Tools run: {', '.join(ran)}.", *held]


def _actions(evidence: Evidence, *, told_nothing: bool) -> list[str]:
    lines = [action_sentence(action) for action in evidence.actions]
    if told_nothing and not any(a.executed for a in evidence.actions):
        lines.append(NOTHING_DONE)
    return lines


def _zones(evidence: Evidence) -> list[str]:
    zones = sorted(evidence.zones.values(), key=lambda z: (z.zone.value, z.pump), reverse=True)
    return [zone_sentence(zone) for zone in zones if zone.zone in (Zone.C, Zone.D)]


def _alarms(evidence: Evidence) -> list[str]:
    alarms = evidence.active_alarms()
    if not alarms:
        return []
    told = [alarm_phrase(alarm) for alarm in alarms[:_MAX_ALARMS]]
    more = f" and {len(alarms) - _MAX_ALARMS} more" if len(alarms) > _MAX_ALARMS else ""
    return [f"Active alarms, most severe first: {'; '.join(told)}{more}."]


def _stale(evidence: Evidence) -> list[Reading]:
    """The stale values, one per pump and measurement (a converted ``value_psi`` left out)."""
    first: dict[tuple[str | None, str], Reading] = {}
    for reading in evidence.stale_values:
        first.setdefault((reading.pump, reading.quantity), reading)
    return list(first.values())[:_MAX_READINGS]


def _readings(evidence: Evidence, texts: Sequence[str]) -> list[Reading]:
    named = {canonical_id(m.group(0)) for t in texts for m in RECORD_ID.finditer(t) if m.group("kind")}
    latest: dict[tuple[str, str], Reading] = {}
    for reading in evidence.readings:
        if reading.pump in named and reading.unit is not None:
            latest.setdefault((reading.pump, reading.quantity), reading)
    return [reading for _, reading in sorted(latest.items())[:_MAX_READINGS]]
