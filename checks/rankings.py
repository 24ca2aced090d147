"""Pump against pump: comparisons of one measurement between two pumps that the tool results contradict.

Asked to "Compare the vibration of PUMP-004 and PUMP-007", the local model read both pumps' readings (7.8 and
9.4 mm/s) and answered "The vibration of PUMP-004 is higher than that of PUMP-007." No number is wrong there,
because none is written, so the other checks pass it. `misranked_pumps` judges, sentence by sentence, one plain
form: exactly two pumps named by id, a comparative and "than" between them (higher, greater, more, larger,
hotter; lower, less, smaller, cooler), and exactly one measurement named in the sentence (vibration, temperature,
flow, pressure, motor current). The first pump is the one said to be higher or lower. A negation or "respectively"
in the sentence, a second measurement or a pump whose value the results do not give unambiguously settles nothing.

The values come from the results' JSON: every object's ``value`` (or a trend's ``latest``) under the
``pump_id`` and ``sensor_type`` it or an enclosing object gives. A pump given two different values of one
measurement (an alarm's value at raise time beside the latest reading) is not judged. Pure: regular expressions
and ``json`` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from checks.grounding import RECORD_ID, SENTENCE_BREAK, pump_key, record_key

__all__ = ["misranked_pumps"]

_COMPARATIVE = re.compile(
    r"\b(?:(?P<higher>higher|greater|more|larger|hotter|warmer)|(?P<lower>lower|less|smaller|cooler))\b"
    r"(?:\s+[\w-]+){0,3}?\s+than\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b|\brespectively\b", re.IGNORECASE)
_MEASUREMENTS = {
    "vibration": re.compile(r"\bvibrat\w*", re.IGNORECASE),
    "bearing_temperature": re.compile(r"\btemperatures?\b|\bhotter\b|\bcooler\b|\bwarmer\b", re.IGNORECASE),
    "flow": re.compile(r"\bflows?\b", re.IGNORECASE),
    "discharge_pressure": re.compile(r"\bpressures?\b", re.IGNORECASE),
    "motor_current": re.compile(r"\bmotor currents?\b|\bcurrent draw\b|\bamps\b", re.IGNORECASE),
}
_VALUE_KEYS = ("value", "latest")


def misranked_pumps(answer: str, tool_results: Sequence[str]) -> list[str]:
    """The pump-against-pump comparisons of ``answer`` that ``tool_results`` contradict, described.

    Each entry reads ``"PUMP-004's vibration 7.8 is not higher than PUMP-007's 9.4"``; without duplicates, in order.
    """
    values = _values(tool_results)
    flagged: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer):
        pumps = [m for m in RECORD_ID.finditer(sentence) if (m.group("kind") or "").upper() == "PUMP"]
        if len({record_key(m) for m in pumps}) != 2:
            continue
        first, second = pumps[0], next(m for m in pumps if record_key(m) != record_key(pumps[0]))
        between = sentence[first.end() : second.start()]
        said = _COMPARATIVE.search(between)
        measured = [name for name, pattern in _MEASUREMENTS.items() if pattern.search(sentence)]
        if said is None or _NEGATION.search(sentence) or len(measured) != 1:
            continue
        a = values.get((record_key(first), measured[0]))
        b = values.get((record_key(second), measured[0]))
        if a is None or b is None:
            continue
        higher = said.group("higher") is not None
        if (a <= b) if higher else (a >= b):
            word = "higher" if higher else "lower"
            flagged[
                f"{first.group()}'s {measured[0].replace('_', ' ')} {_shown(a)} is not {word} than "
                f"{second.group()}'s {_shown(b)}"
            ] = None
    return list(flagged)


def _shown(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _values(tool_results: Sequence[str]) -> dict[tuple[tuple[str, str], str], float]:
    """Each (pump's `record_key`, measurement) the results give exactly one value of."""
    seen: dict[tuple[tuple[str, str], str], set[float]] = {}
    for text in tool_results:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        stack: list[tuple[object, tuple[str, str] | None, str | None]] = [(data, None, None)]
        while stack:
            node, pump, sensor = stack.pop()
            if isinstance(node, dict):
                pump = pump_key(node["pump_id"]) if isinstance(node.get("pump_id"), str) else pump
                sensor = node["sensor_type"] if isinstance(node.get("sensor_type"), str) else sensor
                for key in _VALUE_KEYS:
                    value = node.get(key)
                    if pump and sensor and isinstance(value, int | float) and not isinstance(value, bool):
                        seen.setdefault((pump, sensor), set()).add(float(value))
                stack.extend((child, pump, sensor) for child in node.values() if isinstance(child, dict | list))
            elif isinstance(node, list):
                stack.extend((child, pump, sensor) for child in node)
    return {key: next(iter(found)) for key, found in seen.items() if len(found) == 1}
