"""Check and coerce a call's arguments against the function's schema before it runs.

Models and CLI users send strings for numbers and booleans, integers for ids, and values outside an
enum. SK would turn "false" into True and report a bad enum as a type repr; this check fixes the
types it safely can and otherwise raises a message that shows valid input.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from semantic_kernel.functions.kernel_function_metadata import KernelFunctionMetadata

from core.errors import PumpOpsError

MAX_STRING_LENGTH = 2_000


class ToolArgumentError(PumpOpsError):
    """An argument is missing, unknown, or not of the shape the function accepts."""


def as_object(raw: object) -> dict[str, Any]:
    """A call's arguments as a dict: a mapping as it is, JSON text of an object parsed; anything else is empty."""
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def usage(metadata: KernelFunctionMetadata) -> str:
    """One line listing a function's parameters and their types, e.g. ``pump_id=<string>``."""
    parts = []
    for param in metadata.parameters:
        if not param.include_in_function_choices:
            continue
        schema = param.schema_data or {}
        shape = "|".join(schema["enum"]) if "enum" in schema else schema.get("type", "string")
        parts.append(f"{param.name}=<{shape}>{'' if param.is_required else '?'}")
    return " ".join(parts) or "(no parameters)"


def coerce_arguments(metadata: KernelFunctionMetadata, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Return the arguments checked and converted to the schema's types.

    Raises:
        ToolArgumentError: an unknown or missing parameter, or a value that cannot be the declared
            type; the message names the function, the parameter and what valid input looks like.
    """
    name = metadata.fully_qualified_name
    params = {p.name: p for p in metadata.parameters if p.include_in_function_choices and p.name}
    unknown = sorted(set(arguments) - set(params))
    if unknown:
        raise ToolArgumentError(
            f"{name} has no parameter(s) {', '.join(map(repr, unknown))}. Parameters: {usage(metadata)}."
        )
    result: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None and not params[key].is_required:
            continue
        result[key] = _coerce(name, key, value, params[key].schema_data or {}, metadata, params[key].default_value)
    missing = [n for n, p in params.items() if p.is_required and result.get(n) is None]
    if missing:
        raise ToolArgumentError(f"{name} needs {', '.join(map(repr, missing))}. Parameters: {usage(metadata)}.")
    return result


def _coerce(
    name: str, key: str, value: Any, schema: Mapping[str, Any], metadata: KernelFunctionMetadata, default: Any
) -> Any:
    kind = schema.get("type", "string")
    shown = _shown(value)
    if "enum" in schema:
        allowed = [str(v) for v in schema["enum"]]
        raw = _text(getattr(value, "value", value)) if isinstance(value, str | bool | int) else None
        text = None if raw is None else raw.strip().lower()
        if text not in allowed:
            raise ToolArgumentError(f"{name}: {key}={shown} is not allowed; use one of {', '.join(allowed)}.")
        return text
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in {"true", "false"}:
            return value.strip().lower() == "true"
        raise ToolArgumentError(f"{name}: {key}={shown} must be true or false.")
    if kind == "integer":
        number = _number(value)
        if number is None or not number.is_integer():
            raise ToolArgumentError(f"{name}: {key}={shown} must be a whole number{_integer_example(key, default)}.")
        return int(number)
    if kind == "number":
        number = _number(value)
        if number is None:
            raise ToolArgumentError(f"{name}: {key}={shown} must be a number, e.g. {key}=7.5.")
        return number
    if kind == "string":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ToolArgumentError(f"{name}: {key} must be text, got {type(value).__name__}. {usage(metadata)}.")
        text = _text(value)
        if text is None:
            raise ToolArgumentError(f"{name}: {key} is a number too long to use as text; send at most a few digits.")
        if len(text) > MAX_STRING_LENGTH:
            raise ToolArgumentError(
                f"{name}: {key} is {len(text)} characters; at most {MAX_STRING_LENGTH} are accepted."
            )
        if "\x00" in text:
            raise ToolArgumentError(f"{name}: {key} contains a NUL character; send plain text.")
        if not _encodable(text):
            raise ToolArgumentError(f"{name}: {key} contains an unpaired surrogate (invalid unicode); send plain text.")
        return text
    return value


def _integer_example(key: str, default: Any) -> str:
    """``, e.g. key=<the parameter's default>``: a value the function accepts (a made-up one could be out of range)."""
    if isinstance(default, int) and not isinstance(default, bool):
        return f", e.g. {key}={default}"
    return ", written in digits"


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            return None
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _shown(value: Any) -> str:
    """The value as a message shows it; never raises (an integer past Python's 4300-digit limit cannot be printed)."""
    try:
        return repr(value)[:80]
    except ValueError:
        return f"<{type(value).__name__} too long to show>"


def _text(value: Any) -> str | None:
    """``str(value)``, or None for an integer too long to print."""
    try:
        return str(value)
    except ValueError:
        return None


def _encodable(text: str) -> bool:
    """False when ``text`` holds a lone surrogate, which SQLite and UTF-8 cannot store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
