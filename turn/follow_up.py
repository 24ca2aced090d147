"""What a turn still needs after its first results: the values and the manuals the model's calls did not ask for.

A model may make one call where a question needs two ("How are PUMP-001 and PUMP-002 doing?" answered with
PUMP-001's details only), or answer "the manual says ..." without reading a manual. So after each round of
results the turn (`turn.policies`) compares the operator's message with the calls made since it:

* the message names values of a parameter the turn's calls used beyond theirs (`unasked_values`): the same read
  is called again with each such value;
* the message asks what the manuals say (`asks_the_manuals`) and the turn has not searched them: the search is
  called with the operator's message;
* the message names what only a read the turn did not make answers (its declared words, "work order": `asked_reads`):
  that read is called, with the pumps and the enum values the message names.

Pure: regular expressions and the tool schemas only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chat.mentions import Mentions, enum_words, identifiers, tool_schemas
from checks.evidence import canonical_id

__all__ = ["Unasked", "asked_reads", "asks_the_manuals", "holds_word", "unasked_values"]

# The documents the operator may ask about; "manual" as a way of operating ("manual mode", "manual reset") is not one.
_MANUALS = re.compile(
    r"\b(?:manuals?(?!\s+(?:mode|control|override|operation|start|stop|reset|valve|isolation))"
    r"|playbooks?|handbooks?|documentation|docs|procedures?|guidelines?|datasheets?|data sheets?)\b",
    re.IGNORECASE,
)


def asks_the_manuals(message: str) -> bool:
    """Whether ``message`` asks about the manuals: it names a manual, playbook, procedure, documentation or the like.

    "What does the manual say to do?", "What does the playbook say about low discharge pressure?", "per the
    start-up procedure"; not "Is PUMP-003 in manual mode?" nor "Which pumps were stopped manually?".
    """
    return _MANUALS.search(message) is not None


@dataclass(frozen=True)
class Unasked:
    """Values the operator named for a parameter the turn's calls used that none of them asked for."""

    parameter: str
    values: tuple[Any, ...]


def unasked_values(
    made: Sequence[tuple[str, Mapping[str, Any]]], message: str, tools: Sequence[Mapping[str, Any]]
) -> Unasked | None:
    """The first parameter of the calls ``made`` (name, arguments) whose values ``message`` names beyond theirs.

    "How are PUMP-001 and PUMP-002 doing?" answered with ``get_pump_details(pump_id=PUMP-001)`` leaves
    ``pump_id``: PUMP-002; "both the vibration trend and the bearing temperature trend" after a vibration trend
    leaves ``sensor_type``: bearing_temperature. An enum's value is named when `Mentions` finds it in
    ``message``; another string's when it is one of ``message``'s `identifiers` with the same prefix (``PUMP-``)
    as the value used, compared case-insensitively. A parameter no call used names nothing: a fleet-wide list
    already covers the pumps a question names.
    """
    schemas = tool_schemas(tools)
    said = Mentions.of(message, nouns=enum_words(tools))
    used: dict[str, set[str]] = {}
    for _, arguments in made:
        for key, value in arguments.items():
            used.setdefault(key, set()).add(canonical_id(str(value)))
    for name, arguments in made:
        properties: Mapping[str, Any] = schemas.get(name, {}).get("properties") or {}
        for key, value in arguments.items():
            schema = properties.get(key) or {}
            named: list[Any] = said.enum_values(schema) or []
            canonical = canonical_id(str(value))
            if "enum" not in schema and isinstance(value, str) and "-" in canonical:
                prefix = canonical.split("-", 1)[0] + "-"
                named = [i for i in identifiers(message) if i.upper().startswith(prefix)]
            unasked = tuple(dict.fromkeys(v for v in named if canonical_id(str(v)) not in used[key]))
            if unasked:
                return Unasked(key, unasked)
    return None


def holds_word(message: str, words: Sequence[str]) -> bool:
    """Whether ``message`` holds one of ``words``, each matched at the start of a word.

    Case folded; ``-``, ``_`` and runs of spaces read as one space: "acknowledg" matches "Acknowledge it", "work
    order" matches "work-orders".
    """
    text = " " + re.sub(r"[-_\s]+", " ", message.casefold())
    return any(re.search(r"\b" + re.escape(word), text) for word in words)


def asked_reads(
    made: Sequence[tuple[str, Mapping[str, Any]]],
    message: str,
    tools: Sequence[Mapping[str, Any]],
    words: Mapping[str, Sequence[str]],
    pumps: Sequence[str],
) -> list[tuple[str, Mapping[str, Any]]]:
    """The reads ``message`` asks for that the calls ``made`` left out.

    Each tool of ``words`` (by name: the words naming what only it answers) the message holds a word of, not among
    the calls made.

    Its arguments: each enum value the message names (`Mentions`), and, for a tool taking ``pump_id``, one call per
    pump of ``pumps`` (those the message names), none when it names none. A tool whose required parameters these
    leave unfilled is not called.
    """
    schemas = tool_schemas(tools)
    said = Mentions.of(message, nouns=enum_words(tools))
    called = {name for name, _ in made}
    calls: list[tuple[str, Mapping[str, Any]]] = []
    for name, named_by in words.items():
        if name in called or name not in schemas or not holds_word(message, named_by):
            continue
        schema = schemas[name]
        properties: Mapping[str, Any] = schema.get("properties") or {}
        arguments: dict[str, Any] = {}
        for key, property_schema in properties.items():
            if values := said.enum_values(property_schema):
                arguments[key] = values[0]
        per_pump = [{**arguments, "pump_id": pump} for pump in pumps] if "pump_id" in properties and pumps else []
        for candidate in per_pump or [arguments]:
            if set(schema.get("required") or []) <= set(candidate):
                calls.append((name, candidate))
    return calls
