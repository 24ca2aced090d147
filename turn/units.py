"""Units the operator asks for: the registry's values converted by code, so an answer copies a number, never computes.

The registry keeps one unit per quantity (mm/s, °C, bar, m³/h, A). An operator may ask in another ("in psi", "in
Fahrenheit", "inches per second", "gallons per minute"); a small model then either answers in the registry's unit or
converts in its head, and a number worked out in the head is a number no tool gave. So when the operator's message
names a unit that converts one of the registry's (`asked_conversions`), each of the turn's results gets, beside every
value in that unit, the same value converted (`convert_result`): ``"value": 6.1, "unit": "bar", "value_psi": 88.5``.
The model and the answer checks read the converted value as part of the result. Only absolute values convert (a
reading, a threshold, a trend's minimum, mean, maximum, first and latest value); a rate of change does not, since a
temperature's offset does not apply to it.

Pure: the conversion factors (exact or to six significant figures) and regular expressions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CONVERSIONS", "Conversion", "asked_conversions", "convert_result"]


@dataclass(frozen=True)
class Conversion:
    """From a registry unit to another: ``target = source * factor + offset``, rounded to ``digits`` decimals."""

    source: str
    target: str
    key: str
    """The name of the converted field, beside the value's: ``value_psi``."""
    asked: str
    """How an operator names the target unit (a regular expression, case-insensitive)."""
    factor: float
    offset: float = 0.0
    digits: int = 1

    def apply(self, value: float) -> float:
        """``value`` in the target unit."""
        return round(value * self.factor + self.offset, self.digits)


CONVERSIONS = (
    Conversion("mm/s", "in/s", "in_s", r"\bin/s\b|\binch(?:es)? per second\b|\bips\b", 1 / 25.4, digits=3),
    Conversion("°C", "°F", "f", r"°\s?F\b|\bfahrenheit\b|\bdeg(?:rees)?\s?F\b", 9 / 5, 32.0),
    Conversion("°C", "K", "k", r"\bkelvin\b", 1.0, 273.15, digits=2),
    Conversion("bar", "psi", "psi", r"\bpsi\b|\bpounds per square inch\b", 14.5038),
    Conversion("bar", "kPa", "kpa", r"\bkpa\b|\bkilopascals?\b", 100.0, digits=0),
    Conversion("m³/h", "US gpm", "gpm", r"\bgpm\b|\bgallons? (?:per|a|each) minute\b", 4.40287, digits=0),
    Conversion("m³/h", "L/s", "l_s", r"\bl/s\b|\blit(?:re|er)s? (?:per|a|each) second\b", 1 / 3.6),
    Conversion("m³/h", "L/min", "l_min", r"\bl/min\b|\blit(?:re|er)s? (?:per|a|each) minute\b", 1000 / 60, digits=0),
)

_ABSOLUTE = ("value", "alarm_threshold", "latest", "min", "max", "mean", "first")


def asked_conversions(message: str) -> tuple[Conversion, ...]:
    """The conversions whose target unit ``message`` names ("What is PUMP-001's pressure in psi?": bar to psi)."""
    return tuple(c for c in CONVERSIONS if re.search(c.asked, message, re.IGNORECASE))


def convert_result(text: str, conversions: Sequence[Conversion]) -> str:
    """``text`` (a tool result's JSON) with each absolute value in a source unit given in the target unit beside it.

    An object's values are in its ``unit``; a field ``foo`` gets ``foo_<key>`` next to it (``value_psi``). Text
    that is not JSON, or holds no such value, comes back unchanged. The key names the unit (``psi``, ``f`` for °F,
    ``in_s`` for in/s, ``gpm`` for US gallons per minute).
    """
    if not conversions:
        return text
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return json.dumps(_converted(data, conversions), ensure_ascii=False) if _has_unit(data, conversions) else text


def _has_unit(data: Any, conversions: Sequence[Conversion]) -> bool:
    if isinstance(data, dict):
        if any(data.get("unit") == c.source for c in conversions):
            return True
        return any(_has_unit(v, conversions) for v in data.values())
    return isinstance(data, list) and any(_has_unit(v, conversions) for v in data)


def _converted(data: Any, conversions: Sequence[Conversion]) -> Any:
    if isinstance(data, list):
        return [_converted(v, conversions) for v in data]
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    applying = [c for c in conversions if data.get("unit") == c.source]
    for key, value in data.items():
        out[key] = _converted(value, conversions)
        if key in _ABSOLUTE and isinstance(value, int | float) and not isinstance(value, bool):
            for conversion in applying:
                out[f"{key}_{conversion.key}"] = conversion.apply(float(value))
    return out
