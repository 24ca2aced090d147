"""Tool results as compact text for a small local model: the same values in fewer prompt tokens.

On two CPU cores the local model reads only some tens of prompt tokens a second, so reading a tool
result is most of a turn's time. JSON spends tokens on quotes, braces and keys repeated in every list
item; this rendering keeps every value but writes objects as ``key: value`` lines and lists of flat
objects as one header row and one row per item; a column with the same value in every row of a
longer table is written once above it::

    pump_id: PUMP-007
    latest_readings:
      recorded_at: 2026-12-03T08:00:00Z (every row)
      sensor_type | value | unit
      vibration | 9.4 | mm/s
      flow | 1650.0 | m³/h
      motor_current | 52.0 | A

Values are written as JSON writes them, but shorter where the digits cost tokens and say nothing
(Qwen reads every digit as one token): a whole float without its ``.0`` (``81.0`` as ``81``), a
UTC timestamp on whole minutes without ``T`` and seconds (``2026-12-03T08:00:00Z`` as
``2026-12-03 08:00Z``). The groundedness check reads the tool's own result, where ``81`` is
``81.0``. Text that is not JSON (an error sentence, a truncated result) is returned unchanged.

Nothing is written twice: a key an enclosing object already gave the same value (a readings list's
``sensor_type: vibration`` in every row under ``sensor_type: vibration``; a zone's ``foundation``
under the pump's) is left out where it repeats, and a list envelope that returned everything it
counted (``count: 8, returned: 8, truncated: false``) is written as its ``count``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["compact_json"]

_INDENT = "  "
_HOIST_ROWS = 3
_NOTHING_KNOWN: Mapping[str, str] = MappingProxyType({})
# A list envelope of our tools: when everything counted was returned, ``count`` says it all.
_ENVELOPE_COUNT, _ENVELOPE_RETURNED, _ENVELOPE_TRUNCATED = "count", "returned", "truncated"
_WHOLE_MINUTE = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}):00(?:\.0+)?Z")


def compact_json(text: str) -> str:
    """``text`` rendered compactly when it is a JSON object or array; otherwise ``text`` unchanged."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    return "\n".join(_lines(value, 0))


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        if whole := _WHOLE_MINUTE.fullmatch(value):
            return f"{whole[1]} {whole[2]}Z"
        # One line per value (whitespace runs folded); an empty string stays visible as "".
        return " ".join(value.split()) if value.strip() else json.dumps(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _table_columns(items: list[Any]) -> list[str] | None:
    """The shared keys when ``items`` are objects of scalar values (and no cell holds the separator)."""
    if len(items) < 2 or not all(isinstance(i, Mapping) for i in items):
        return None
    columns: list[str] = []
    for item in items:
        for key, value in item.items():
            if not _is_scalar(value) or (isinstance(value, str) and "|" in value):
                return None
            if key not in columns:
                columns.append(str(key))
    return columns


def _shared_columns(items: list[Any], columns: list[str]) -> list[str]:
    """Columns with one value in every row of a table of three rows or more, written once above it."""
    if len(items) < _HOIST_ROWS:
        return []
    shared = [c for c in columns if all(c in i for i in items) and len({_scalar(i[c]) for i in items}) == 1]
    return shared if len(shared) < len(columns) else []


def _lines(value: Any, depth: int, known: Mapping[str, str] = _NOTHING_KNOWN) -> list[str]:
    """``value``'s lines at ``depth``; ``known``: the scalar values enclosing objects gave their keys."""
    pad = _INDENT * depth
    if isinstance(value, Mapping):
        if not value:
            return [f"{pad}(empty)"]
        inner = {**known, **{str(k): _scalar(v) for k, v in value.items() if _is_scalar(v)}}
        out: list[str] = []
        for key, item in _unrepeated(value, known).items():
            out += _entry(key, item, depth, inner)
        return out or [f"{pad}(as above)"]
    if isinstance(value, list):
        return _list_lines(value, depth, known)
    return [pad + _scalar(value)]


def _unrepeated(value: Mapping[Any, Any], known: Mapping[str, str]) -> dict[str, Any]:
    """``value``'s entries less the scalars an enclosing object already gave and a complete envelope's tally."""
    entries = {str(k): v for k, v in value.items() if not (_is_scalar(v) and known.get(str(k)) == _scalar(v))}
    returned, count = entries.get(_ENVELOPE_RETURNED), entries.get(_ENVELOPE_COUNT)
    if entries.get(_ENVELOPE_TRUNCATED) is False and isinstance(count, int) and returned == count:
        del entries[_ENVELOPE_RETURNED], entries[_ENVELOPE_TRUNCATED]
    return entries


def _entry(key: str, value: Any, depth: int, known: Mapping[str, str]) -> list[str]:
    pad = _INDENT * depth
    if _is_scalar(value):
        return [f"{pad}{key}: {_scalar(value)}"]
    if isinstance(value, Mapping):
        if not value:
            return [f"{pad}{key}: (none)"]
        shown = _unrepeated(value, known)
        if shown and all(_is_scalar(v) for v in shown.values()) and len(shown) <= 4:
            inline = ", ".join(f"{k}={_scalar(v)}" for k, v in shown.items())
            return [f"{pad}{key}: {inline}"]
        return [f"{pad}{key}:", *_lines(value, depth + 1, known)]
    if isinstance(value, list):
        if not value:
            return [f"{pad}{key}: (none)"]
        if all(_is_scalar(v) for v in value):
            return [f"{pad}{key}: " + ", ".join(_scalar(v) for v in value)]
        return [f"{pad}{key}:", *_list_lines(value, depth + 1, known)]
    return [f"{pad}{key}: {_scalar(str(value))}"]


def _list_lines(items: list[Any], depth: int, known: Mapping[str, str] = _NOTHING_KNOWN) -> list[str]:
    pad = _INDENT * depth
    if not items:
        return [f"{pad}(none)"]
    columns = _table_columns(items)
    if columns is not None:
        repeated = [c for c in columns if all(c in i and known.get(c) == _scalar(i[c]) for i in items)]
        if len(repeated) < len(columns):
            columns = [c for c in columns if c not in repeated]
        shared = _shared_columns(items, columns)
        columns = [c for c in columns if c not in shared]
        rows = [" | ".join(_scalar(item.get(c)) if c in item else "-" for c in columns) for item in items]
        hoisted = [f"{pad}{c}: {_scalar(items[0][c])} (every row)" for c in shared]
        return [*hoisted, pad + " | ".join(columns), *(pad + row for row in rows)]
    out: list[str] = []
    for item in items:
        lines = _lines(item, depth + 1, known)
        first = lines[0][len(_INDENT) * (depth + 1) :]
        out += [f"{pad}- {first}", *lines[1:]]
    return out
