"""Pump against pump: comparisons of one measurement between two pumps that the tool results contradict.

Asked to "Compare the vibration of PUMP-004 and PUMP-007", the local model read both pumps' readings (7.8 and
9.4 mm/s) and answered "The vibration of PUMP-004 is higher than that of PUMP-007." No number is wrong there,
because none is written, so the other checks pass it. `misranked_pumps` judges, sentence by sentence, one plain
form: exactly two pumps named by id, a comparative and "than" between them (higher, greater, more, larger,
hotter; lower, less, smaller, cooler), and exactly one measurement named in the sentence (vibration, temperature,
flow, pressure, motor current). The first pump is the one said to be higher or lower. A negation or "respectively"
in the sentence, a second measurement or a pump whose value the results do not give unambiguously settles nothing.

The values are the turn's evidence readings (`checks.evidence.Evidence.readings`): every object's ``value`` (or a
trend's ``latest``) under the ``pump_id`` and ``sensor_type`` it or an enclosing object gives. A pump given two
different values of one measurement (an alarm's value at raise time beside the latest reading) is not judged.
The word lists are `checks.vocabulary`'s.
"""

from __future__ import annotations

import re

from checks.evidence import Evidence
from checks.grounding import SENTENCE_BREAK
from checks.record_ids import RECORD_ID, pump_key, record_key
from checks.vocabulary import MEASUREMENT_WORDS, RANK_HIGHER, RANK_LOWER, alternation

__all__ = ["misranked_pumps"]

_COMPARATIVE = re.compile(
    rf"(?:(?P<higher>{alternation(RANK_HIGHER)})|(?P<lower>{alternation(RANK_LOWER)}))(?:\s+[\w-]+){{0,3}}?\s+than\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:not|never|no)\b|n't\b|\brespectively\b", re.IGNORECASE)
_MEASUREMENTS = {
    name: re.compile(alternation(words, escape=False).replace(" ", r"\s+"), re.IGNORECASE)
    for name, words in MEASUREMENT_WORDS.items()
}


def misranked_pumps(answer: str, evidence: Evidence) -> list[str]:
    """The pump-against-pump comparisons of ``answer`` that ``evidence`` contradicts, described.

    Each entry reads ``"PUMP-004's vibration 7.8 is not higher than PUMP-007's 9.4"``; without duplicates, in order.
    """
    values = _values(evidence)
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


def _values(evidence: Evidence) -> dict[tuple[tuple[str, str], str], float]:
    """Each (pump's `record_key`, measurement) the results give exactly one value of."""
    seen: dict[tuple[tuple[str, str], str], set[float]] = {}
    for reading in evidence.readings:
        key = pump_key(reading.pump) if reading.pump else None
        if key is not None:
            seen.setdefault((key, reading.quantity), set()).add(reading.value)
    return {key: next(iter(found)) for key, found in seen.items() if len(found) == 1}
