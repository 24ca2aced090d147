"""Structured answers: the model picks the evidence records that answer; code writes the sentences.

With ``Agent.StructuredAnswers`` on, the turn shows the model its evidence as numbered records (`answer_records`:
``E1``, ``E2``, … one compact line each, `answer_request`) and asks for JSON of a fixed shape (`answer_schema`)::

    {"claims": [{"record": "E2"}, {"record": "E5"}], "note": "No, it should not keep running."}

``claims`` only select records (the ids are an enum of this turn's records); ``note`` is a short sentence in words
whose digits the schema forbids. `render_answer` writes the answer: the note, then one sentence per cited record
(`checks.sentences`, the same sentences the fallback answer uses), so every number and id in it is copied from
the tool results. What the reply gets wrong is dropped and said (`RenderedAnswer.dropped`): a claim citing no
record of this turn, a note holding digits (a server that does not enforce the schema). No claim at all gives a
plain sentence saying the results hold nothing that answers the question, after the note if there is one; claims
that all cite records the turn lacks give no answer (the turn keeps the model's own).

The records, in this order (at most `MAX_RECORDS`): the turn's writes, calls that failed, each pump's ISO 10816-3
zone, the alarms listed, the pumps and work orders the results describe, trends, manual passages, each result's own
fields (counts, tallies, filters: an empty list is a fact too) and the latest reading of each pump's measurement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from checks.evidence import ID_FIELDS, Evidence, Passage, Reading
from checks.sentences import (
    action_sentence,
    alarm_phrase,
    alarm_sentence,
    failure_sentence,
    number,
    overview_sentence,
    passage_sentence,
    pump_sentence,
    reading_sentence,
    trend_sentence,
    work_order_sentence,
    zone_sentence,
)
from checks.vocabulary import SEVERITIES
from governance.effects import Effect

__all__ = [
    "MAX_CLAIMS",
    "MAX_RECORDS",
    "NOTE_CHARS",
    "NOTHING_CITED",
    "NOTHING_FOUND",
    "AnswerRecord",
    "RenderedAnswer",
    "answer_records",
    "answer_request",
    "answer_schema",
    "render_answer",
]

MAX_RECORDS = 40
"""At most this many records are shown to the model (a line of some 15 to 40 tokens each)."""
MAX_CLAIMS = 6
NOTE_CHARS = 120
NO_DIGITS = "^[^0-9]*$"
"""The note's pattern: numbers belong to the records, which code writes out."""
NOTHING_FOUND = "The tool results hold nothing that answers this."
NOTHING_CITED = "No tool result was cited for this."
_LABEL_CHARS = 160
_FAILED = {"error", "denied", "rejected"}
_DIGIT = re.compile(r"[0-9]")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class AnswerRecord:
    """One fact of the evidence: its id (``E1``), the line the model reads, and the sentence the answer writes."""

    id: str
    label: str
    sentence: str


@dataclass(frozen=True)
class RenderedAnswer:
    """The answer code wrote from a structured reply, and what of the reply it dropped (each said plainly)."""

    text: str
    cited: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def answer_records(evidence: Evidence, limit: int = MAX_RECORDS) -> list[AnswerRecord]:
    """The evidence as numbered records (see the module docstring); none when the turn read nothing."""
    facts = [
        *_actions(evidence),
        *_failures(evidence),
        *_zones(evidence),
        *_alarms(evidence),
        *_entities(evidence),
        *((trend_sentence(t), trend_sentence(t)) for t in evidence.trends),
        *(_passage(p) for p in evidence.passages),
        *_overviews(evidence),
        *_readings(evidence),
    ]
    unique = list(dict.fromkeys(facts))  # the same fact from two results is one record
    return [AnswerRecord(f"E{n}", _line(label), sentence) for n, (label, sentence) in enumerate(unique[:limit], 1)]


def answer_schema(ids: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a structured answer citing ``ids`` (Ollama's ``format``; the local model's grammar)."""
    claim = {
        "type": "object",
        "properties": {"record": {"type": "string", "enum": list(ids)}},
        "required": ["record"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "claims": {"type": "array", "items": claim, "maxItems": MAX_CLAIMS},
            "note": {"type": "string", "maxLength": NOTE_CHARS, "pattern": NO_DIGITS},
        },
        "required": ["claims", "note"],
        "additionalProperties": False,
    }


def answer_request(records: Sequence[AnswerRecord]) -> str:
    """The message asking for the structured answer: the records, one a line, and the shape to reply in."""
    lines = "\n".join(f"{r.id} {r.label}" for r in records)
    return (
        "Answer step (the operator does not see this message). This turn's tool results as numbered records:\n"
        f"{lines}\n"
        'Reply with JSON only: {"claims": [{"record": "E1"}, ...], "note": "..."}. '
        f"claims: the records that answer the operator's question, most important first, at most {MAX_CLAIMS}; "
        "none when no record answers it. note: one short sentence in words that answers the question directly, "
        'without digits (the cited records give the ids and values), or "". '
        "PumpOps writes out each cited record with its values after your note."
    )


def render_answer(reply: str, records: Sequence[AnswerRecord]) -> RenderedAnswer | None:
    """The answer written from the model's ``reply``.

    None when the reply is not JSON of the shape asked for, or every claim in it cites a record the turn lacks (a
    reply about other records is no answer to write out). A claim written as the bare id (``"E2"``) counts.
    """
    data = _json_object(reply)
    claims = data.get("claims") if data is not None else None
    if data is None or not isinstance(claims, list):
        return None
    by_id = {r.id: r for r in records}
    cited: list[str] = []
    dropped: list[str] = []
    for claim in claims:
        wanted = claim.get("record") if isinstance(claim, Mapping) else claim
        if not isinstance(wanted, str) or wanted.strip().upper() not in by_id:
            named = wanted if isinstance(wanted, str) else repr(claim)
            dropped.append(f"{named} is no record of this turn's results")
            continue
        if (key := wanted.strip().upper()) not in cited:
            cited.append(key)
    if claims and not cited:
        return None
    if len(cited) > MAX_CLAIMS:
        dropped.append(f"claims after the first {MAX_CLAIMS} ({', '.join(cited[MAX_CLAIMS:])})")
        cited = cited[:MAX_CLAIMS]
    note = _note(data.get("note"), dropped)
    lines = [note] if note else []
    if cited:
        lines += [by_id[key].sentence for key in cited]
    else:
        lines.append(NOTHING_CITED if note else NOTHING_FOUND)
    return RenderedAnswer("\n".join(lines), cited, dropped)


def _note(value: Any, dropped: list[str]) -> str:
    if not isinstance(value, str):
        return ""
    text = _SPACES.sub(" ", value).strip()
    if _DIGIT.search(text):
        dropped.append(f"the note {text[:60]!r}, which held digits")
        return ""
    if len(text) > NOTE_CHARS:
        text = text[:NOTE_CHARS].rsplit(" ", 1)[0]
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _json_object(reply: str) -> dict[str, Any] | None:
    text = reply.strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


Fact = tuple[str, str]  # what the model reads, what the answer says


def _actions(evidence: Evidence) -> Iterator[Fact]:
    for action in evidence.actions:
        said = action_sentence(action)
        yield said, said


def _failures(evidence: Evidence) -> Iterator[Fact]:
    for result in evidence.results:
        if result.status in _FAILED:
            text = result.data.get("error") if isinstance(result.data, dict) else None
            said = failure_sentence(_subject(result.tool), text if isinstance(text, str) else result.text)
            yield said, said


def _zones(evidence: Evidence) -> Iterator[Fact]:
    for pump in sorted(evidence.zones):
        zone = evidence.zones[pump]
        value = f" ({number(zone.value_mm_s)} mm/s)" if zone.value_mm_s is not None else ""
        yield f"{pump} vibration zone {zone.zone.value}{value}", zone_sentence(zone)


def _alarms(evidence: Evidence) -> Iterator[Fact]:
    alarms = sorted(evidence.alarm_list.values(), key=lambda a: (not a.active, SEVERITIES.index(a.severity)))
    for alarm in alarms:
        fields = evidence.records.get(alarm.alarm_id or "", {})
        message = fields.get("message")
        state = "active" if alarm.active else "cleared"
        yield f"{alarm_phrase(alarm)}, {state}", alarm_sentence(alarm, message if isinstance(message, str) else None)


def _entities(evidence: Evidence) -> Iterator[Fact]:
    for record_id, fields in evidence.records.items():
        if record_id.startswith("PUMP-") and any(k in fields for k in _PUMP_FIELDS):
            said = pump_sentence(record_id, fields)
        elif record_id.startswith("WO-"):
            said = work_order_sentence(record_id, fields)
        else:
            continue  # alarms and approvals are told as alarms and actions
        yield said, said


_PUMP_FIELDS = ("name", "location", "model", "status", "last_maintenance_on", "installed_on", "active_alarms")


def _passage(passage: Passage) -> Fact:
    section = f", {passage.section}" if passage.section else ""
    opening = _SPACES.sub(" ", passage.text).strip()[:90]
    return f'manual "{passage.title}"{section}: {opening} …', passage_sentence(passage)


def _overviews(evidence: Evidence) -> Iterator[Fact]:
    for result in evidence.results:
        data = result.data
        if result.status != "ok" or result.effect is not Effect.READ or not isinstance(data, dict):
            continue
        if any(isinstance(data.get(k), str) for k in ID_FIELDS) or _holds_passages(data):
            continue  # a record's own fields are told as that record; a search as its passages
        fields = {k: v for k, v in data.items() if _overview_value(v)}
        if fields:
            said = overview_sentence(_subject(result.tool), fields)
            yield said, said


def _overview_value(value: Any) -> bool:
    if isinstance(value, Mapping):  # tallies and filters; not a record (the worst pump), told as that record
        flat = all(isinstance(v, str | int | float | bool) for v in value.values())
        return bool(value) and flat and not any(k in value for k in ID_FIELDS)
    if isinstance(value, str):
        return 0 < len(value) <= 40  # an order or a unit, not prose (a search's question)
    return isinstance(value, int | float | bool)


def _holds_passages(data: Mapping[str, Any]) -> bool:
    """Whether a result lists manual passages: its passages tell it (a search that found none has its count)."""
    lists = [v for v in data.values() if isinstance(v, list)]
    return any(isinstance(i, Mapping) and "text" in i and "title" in i for v in lists for i in v)


def _readings(evidence: Evidence) -> Iterator[Fact]:
    """The first reading the results give of each pump's measurement, one with a unit where there is one.

    A vibration its pump's zone record gives already is left out.
    """
    chosen: dict[tuple[str, str], Reading] = {}
    for reading in evidence.readings:
        zone = evidence.zones.get(reading.pump or "")
        told = zone is not None and reading.quantity == "vibration" and zone.value_mm_s == reading.value
        if reading.pump is None or told:
            continue
        key = (reading.pump, reading.quantity)
        if key not in chosen or (chosen[key].unit is None and reading.unit is not None):
            chosen[key] = reading
    for reading in chosen.values():
        said = reading_sentence(reading)
        yield said, said


def _subject(tool: str) -> str:
    """A tool named for the reader: ``assets-get_system_summary`` is "System summary", ``list_pumps`` "Pumps listed"."""
    function = tool.partition("-")[2] or tool
    verb, _, noun = function.partition("_")
    words = {"get": noun, "list": f"{noun} listed", "search": f"{noun} search"}.get(verb, function) if noun else verb
    words = words.replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else "Results"


def _line(label: str) -> str:
    text = _SPACES.sub(" ", label).strip()
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 2].rsplit(" ", 1)[0] + " …"
