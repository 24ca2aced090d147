"""What a turn still needs after its first results: the values and the manuals the model's calls did not ask for.

A model may make one call where a question needs two ("How are PUMP-001 and PUMP-002 doing?" answered with
PUMP-001's details only), or answer "the manual says ..." without reading a manual. So after each round of
results the turn (`turn.policies`) compares the operator's message with the calls made since it:

* the message names values of a parameter the turn's calls used beyond theirs (`unasked_values`): the same read
  is called again with each such value;
* the message asks what the manuals say (`asks_the_manuals`) and the turn has not searched them: the search is
  called with the operator's message.

Pure: regular expressions and the tool schemas only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chat.mentions import Mentions, enum_words, identifiers, tool_schemas
from checks.evidence import canonical_id

__all__ = ["Unasked", "asks_the_manuals", "unasked_values"]

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
