"""What a conversation says about the tools' values: mentioned enum values, numbers, spans of time, identifiers.

Shared by the turn's policies (which values the operator named that no call asked for) and the local model's
grammars (which optional values a call may carry). Pure: regular expressions and the tool schemas only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twin.identifiers import RECORD_KINDS, canonical_record_id, record_mentions

__all__ = ["Mentions", "enum_words", "identifiers", "tool_function", "tool_schemas"]

# A hyphenated identifier as the operator writes it (`identifiers`): PUMP-007, Station-C, ALM-0001.
_IDENTIFIER = re.compile(r"(?<![\w-])[A-Za-z]+-[A-Za-z0-9]+(?![\w-])")

_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?:\.\d+)?(?![\w-])")
# A span of time said in words stands for its number of days ("the past week" is 7, "two months" 60).
_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}
_COUNT_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "twelve": 12}
_SPAN = re.compile(
    r"\b(?:(\d{1,3}|" + "|".join(_COUNT_WORDS) + r")[\s-]+)?(" + "|".join(_UNIT_DAYS) + r")s?\b", re.IGNORECASE
)


def _span_days(text: str) -> set[float]:
    """Days of the spans of time ``text`` names in words or with a count ("3 weeks" is 21; "30 days" stays 30)."""
    days: set[float] = set()
    for count, unit in _SPAN.findall(text):
        number = int(count) if count.isdigit() else _COUNT_WORDS.get(count.lower(), 1)  # no count: one unit
        days.add(float(number * _UNIT_DAYS[unit.lower()]))
    return days


@dataclass(frozen=True)
class Mentions:
    """What the operator and the assistant have said in a conversation: the values optional arguments may take.

    A value counts as mentioned when it appears as a whole word or phrase, case-insensitive, ``_``
    and ``-`` read as spaces (``in_progress`` matches "in progress", ``PUMP-007`` "pump 007"); a
    number when it stands alone in the text (not the ``007`` of ``PUMP-007``), or as the days of a
    span of time ("the past week" mentions 7, "two months" 60, "3 weeks" 21).

    A word directly before one of ``nouns`` (the values of the tools' enums) qualifies that noun
    and names nothing itself: "low discharge pressure" does not mention the severity ``low``, nor
    "high vibration" ``high``; "high alarms" and "low priority" still do.
    """

    text: str
    numbers: frozenset[float]
    nouns: tuple[str, ...] = ()

    @classmethod
    def of(cls, text: str, *, nouns: Iterable[str] = ()) -> Mentions:
        """The mentions in ``text``; ``nouns`` are the phrases a word before them only qualifies (`enum_words`)."""
        numbers = {float(n) for n in _NUMBER.findall(text)} | _span_days(text)
        spaced = {_spaced(noun) for noun in nouns} - {""}
        return cls(text=_spaced(text), numbers=frozenset(numbers), nouns=tuple(sorted(spaced)))

    def mentions(self, value: Any) -> bool:
        """Whether ``value`` (a string or a number; never a boolean) was mentioned."""
        if isinstance(value, bool):
            return False
        if isinstance(value, int | float):
            return float(value) in self.numbers
        needle = _spaced(str(value))
        if not needle:
            return False
        found = re.finditer(rf"(?<!\w){re.escape(needle)}(?!\w)", self.text)
        return any(not self._qualifies(match.end(), needle) for match in found)

    def _qualifies(self, end: int, needle: str) -> bool:
        """Whether the words after position ``end`` start another noun, which ``needle`` then qualifies."""
        rest = self.text[end:].lstrip()
        return any(noun != needle and re.match(rf"{re.escape(noun)}(?!\w)", rest) for noun in self.nouns)

    def enum_values(self, schema: Mapping[str, Any]) -> list[Any] | None:
        """The mentioned values of an enum schema; None when ``schema`` is not an enum."""
        enum = schema.get("enum")
        return None if enum is None else [v for v in enum if self.mentions(v)]

    def allows(self, arguments: Mapping[str, Any], parameters: Mapping[str, Any]) -> bool:
        """Whether the call grammar built with these mentions would not have changed ``arguments``' optional enums.

        It allows an optional enum only the mentioned values, and none when none is mentioned; an
        unmentioned value is then left out either way (`grounded`). Only a value that is not one of
        the mentioned ones, where some are, is one the grammar would have replaced.
        """
        properties: Mapping[str, Any] = parameters.get("properties") or {}
        required = set(parameters.get("required") or [])
        return all(
            key in required or self.mentions(value) or not self.enum_values(properties.get(key, {}))
            for key, value in arguments.items()
        )

    def grounded(self, arguments: Mapping[str, Any], parameters: Mapping[str, Any]) -> dict[str, Any]:
        """``arguments`` without the optional ones whose value was never mentioned (booleans are kept)."""
        required = set(parameters.get("required") or [])
        return {
            key: value
            for key, value in arguments.items()
            if key in required or isinstance(value, bool) or self.mentions(value)
        }


def tool_function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool's function (``name``, ``description``, ``parameters``): as advertised under ``"function"``, or bare."""
    function = tool.get("function", tool)
    return function if isinstance(function, Mapping) else {}


def tool_schemas(tools: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Each tool's parameters schema by its name (an empty one for a tool without parameters)."""
    return {str(tool_function(t).get("name")): tool_function(t).get("parameters") or {} for t in tools}


def enum_words(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every string value of the tools' parameter enums (``Mentions.of``'s nouns), e.g. ``flow``, ``critical``."""
    words: set[str] = set()
    for tool in tools:
        properties = (tool_function(tool).get("parameters") or {}).get("properties") or {}
        for schema in properties.values():
            words.update(v for v in schema.get("enum") or () if isinstance(v, str))
    return words


def _spaced(text: str) -> str:
    return " ".join(re.sub(r"[_-]", " ", text.lower()).split())


def identifiers(text: str) -> list[str]:
    """The identifiers ``text`` names, once each: record ids canonical, then other hyphenated ones as written.

    A record id however spelled (``pump 7``, ``P7`` and ``pump-7`` are ``PUMP-007``; ``alarm 3`` is ``ALM-0003``:
    `twin.identifiers.record_mentions`); another identifier as written (``Station-C``).
    """
    records = [found for kind in RECORD_KINDS for found in record_mentions(text, kind)]
    others = [i for i in _IDENTIFIER.findall(text) if canonical_record_id(i) is None]
    return list(dict.fromkeys(records + others))
