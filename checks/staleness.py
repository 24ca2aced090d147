"""A stale value stated as the current one: an answer that gives a value the results mark stale, plainly.

A value older than `Telemetry.StaleAfterSeconds` is marked ``"stale": true`` in the results (`twin.freshness`) and
filed in `checks.evidence.Evidence.stale_values`. A sentence (or list line) of the answer that gives such a value is
a finding unless it says the value is not current: a qualifier word (`checks.vocabulary.STALE_QUALIFIERS`: "stale",
"last", "as of", "ago" …) or a date or clock time in the sentence. Which values a sentence gives:

* a sentence naming pumps speaks for them only; one naming none, for every pump of the results;
* a number matches a stale value as the grounding check matches numbers (`checks.numbers`: formatting and rounding
  to the answer's precision); a small integer (0-10, rule 3 there) only when equal and in a sentence naming its
  pump; a percentage never;
* a number that is also a fresh value of the same pump is not judged (the sentence may mean that one); a
  measurement whose latest value is stale has no fresh value (an alarm's value at raising is older still).
"""

from __future__ import annotations

import re
from decimal import Decimal

from checks.evidence import Evidence, Reading
from checks.grounding import SENTENCE_BREAK
from checks.numbers import Mention, is_supported, mask, mentions
from checks.safety import pump_ids
from checks.sentences import number, stale_phrase
from checks.vocabulary import STALE_QUALIFIERS, alternation

__all__ = ["stale_as_current"]

_QUALIFIED = re.compile(alternation(STALE_QUALIFIERS), re.IGNORECASE)
_DATED = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}\b")
"""A date or a clock time in the sentence tells when the value was read."""
_QUOTED = 80


def stale_as_current(answer: str, evidence: Evidence) -> list[str]:
    """The stale values ``answer`` states as current, each with its reading time and the sentence.

    Each entry reads ``"PUMP-003 vibration 4.2 mm/s is stale (last reading at 2026-12-06 10:00 UTC, stale), but the
    answer gives it as current: 'PUMP-003 vibration is 4.2 mm/s.'"``; without duplicates, in order.
    """
    if not evidence.stale_values:
        return []
    stale = {(v.pump, v.quantity) for v in evidence.stale_values}
    fresh: dict[str | None, set[Decimal]] = {}
    for reading in evidence.readings:
        if not reading.stale and (reading.pump, reading.quantity) not in stale:
            fresh.setdefault(reading.pump, set()).add(_decimal(reading.value))
    found: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer.replace("\u2019", "'")):
        if not sentence.strip() or _QUALIFIED.search(sentence) or _DATED.search(sentence):
            continue
        named = set(pump_ids(sentence))
        values = [v for v in evidence.stale_values if not named or v.pump in named]
        for mention in mentions(mask(sentence)):
            for value in values:
                if _gives(mention, value, named) and not is_supported(mention, fresh.get(value.pump, set())):
                    found[_finding(value, sentence)] = None
    return list(found)


def _gives(mention: Mention, value: Reading, named: set[str]) -> bool:
    """Whether the number ``mention`` is the stale ``value`` (see the module docstring)."""
    if mention.percent:
        return False
    if mention.always_accepted:
        return value.pump in named and mention.value == _decimal(value.value)
    return is_supported(mention, {_decimal(value.value)})


def _finding(value: Reading, sentence: str) -> str:
    pump = f"{value.pump} " if value.pump else ""
    unit = f" {value.unit}" if value.unit else ""
    quoted = sentence.strip()
    quoted = quoted if len(quoted) <= _QUOTED else quoted[: _QUOTED - 1] + "…"
    what = f"{pump}{value.quantity.replace('_', ' ')} {number(value.value)}{unit}"
    return f"{what} is stale ({stale_phrase(value.recorded_at)}), but the answer gives it as current: {quoted!r}"


def _decimal(value: float) -> Decimal:
    return abs(Decimal(repr(value)))
