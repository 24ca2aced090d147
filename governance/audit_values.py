"""What an audit row keeps of a call's values: JSON-ready, strings capped, secrets redacted, text encodable.

An argument whose name looks secret (``password``, ``token``, ``api_key`` …) is stored as ``[redacted]``, at any
depth; strings, lists, mappings and nesting are capped (`MAX_STRING_CHARS`, `MAX_ITEMS`, `MAX_DEPTH`) with a marker
saying what was cut; anything JSON cannot hold (a non-finite number, a huge integer, an object) is stored as text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from pydantic import BaseModel

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_STRING_CHARS", "capped", "sanitize_arguments", "utf8"]

MAX_STRING_CHARS = 500
"""Longest string kept from an argument value or an error message; longer ones are cut and marked."""

MAX_ITEMS = 50
"""Most items kept from a list or mapping inside an argument value."""

MAX_DEPTH = 6
"""Deepest nesting kept inside an argument value."""

_SECRET_KEY_PARTS = ("password", "passwd", "secret", "token", "api_key", "apikey", "credential")
_REDACTED = "[redacted]"
_MAX_INT_BITS = 1_024


def sanitize_arguments(arguments: Mapping[str, Any]) -> str:
    """Arguments as compact JSON with sorted keys: strings capped, secrets redacted, anything else made text."""
    clean = {_key(key): _REDACTED if _is_secret(key) else _sanitize(value, 1) for key, value in arguments.items()}
    return json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _is_secret(key: object) -> bool:
    lowered = str(key).lower()
    return any(part in lowered for part in _SECRET_KEY_PARTS)


def capped(text: str) -> str:
    """``text`` (made `utf8`) cut to `MAX_STRING_CHARS`, marked with how much was cut."""
    text = utf8(text)
    if len(text) <= MAX_STRING_CHARS:
        return text
    return f"{text[:MAX_STRING_CHARS]}…[+{len(text) - MAX_STRING_CHARS} chars]"


def utf8(text: str) -> str:
    """``text`` with lone surrogates replaced: JSON, SQLite and the row hash need encodable UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _key(key: object) -> str:
    return capped(key) if isinstance(key, str) else capped(str(_sanitize(key, MAX_DEPTH)))


def _sanitize(value: Any, depth: int) -> Any:
    if isinstance(value, Enum):
        value = value.value
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        # JSON cannot print an integer past Python's 4300-digit limit; the row records its size instead.
        return value if value.bit_length() <= _MAX_INT_BITS else f"[integer of {value.bit_length()} bits]"
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return capped(value)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if depth >= MAX_DEPTH and isinstance(value, Mapping | list | tuple | set | frozenset):
        return "[nested too deep]"
    if isinstance(value, Mapping):
        items = list(value.items())
        kept = {
            str(key): _REDACTED if _is_secret(key) else _sanitize(item, depth + 1) for key, item in items[:MAX_ITEMS]
        }
        if len(items) > MAX_ITEMS:
            kept["…"] = f"[+{len(items) - MAX_ITEMS} items]"
        return kept
    if isinstance(value, list | tuple | set | frozenset):
        sequence = sorted(value, key=repr) if isinstance(value, set | frozenset) else list(value)
        kept_items = [_sanitize(item, depth + 1) for item in sequence[:MAX_ITEMS]]
        if len(sequence) > MAX_ITEMS:
            kept_items.append(f"[+{len(sequence) - MAX_ITEMS} items]")
        return kept_items
    return capped(str(value))
