"""Calling kernel functions directly, without a model: name resolution, argument parsing, the schema.

Used by `pumpops tools list/call`; every call goes through `kernel.invoke`, so every filter applies.
"""

from __future__ import annotations

import json
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_calling_utils import kernel_function_metadata_to_function_call_format
from semantic_kernel.exceptions import KernelFunctionNotFoundError, KernelPluginNotFoundError
from semantic_kernel.functions import KernelArguments, KernelFunction

from kernel_setup.errors import ToolCallError
from storage.errors import PumpOpsError


def tool_definitions(kernel: Kernel) -> list[dict[str, Any]]:
    """Every kernel function's tool definition exactly as SK sends it to the model."""
    return [
        kernel_function_metadata_to_function_call_format(metadata)
        for metadata in sorted(kernel.get_full_list_of_function_metadata(), key=lambda m: m.fully_qualified_name)
    ]


def resolve_function(kernel: Kernel, name: str) -> KernelFunction:
    """Find a function by ``plugin-function`` or ``plugin.function``.

    Raises:
        ToolCallError: no such function; the message lists the valid names.
    """
    for separator in ("-", "."):
        plugin, sep, function = name.partition(separator)
        if sep and plugin and function:
            try:
                return kernel.get_function(plugin, function)
            except (KernelFunctionNotFoundError, KernelPluginNotFoundError):
                continue
    known = ", ".join(d["function"]["name"] for d in tool_definitions(kernel))
    raise ToolCallError(f"Unknown function {name!r}. Use plugin-function or plugin.function; known: {known}.")


def parse_arguments(function: KernelFunction, pairs: list[str]) -> dict[str, Any]:
    """Turn ``key=value`` strings into typed arguments using the function's parameter schema.

    Raises:
        ToolCallError: a malformed pair, an unknown or repeated key, a value of the wrong type, or a
            missing required parameter; the message shows valid input.
    """
    params = {p.name: p for p in function.metadata.parameters if p.include_in_function_choices}
    usage = " ".join(f"{n}=<{(p.schema_data or {}).get('type', 'string')}>" for n, p in params.items()) or "(none)"
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ToolCallError(f"Argument {pair!r} is not key=value. Parameters: {usage}.")
        if key not in params:
            raise ToolCallError(f"{function.fully_qualified_name} has no parameter {key!r}. Parameters: {usage}.")
        if key in values:
            raise ToolCallError(f"Parameter {key!r} is given twice.")
        values[key] = _coerce(key, raw, params[key].schema_data or {})
    missing = [n for n, p in params.items() if p.is_required and n not in values]
    if missing:
        raise ToolCallError(f"Missing required parameter(s) {', '.join(missing)}. Parameters: {usage}.")
    return values


def _coerce(key: str, raw: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type", "string")
    kinds = kind if isinstance(kind, list) else [kind]
    if "enum" in schema and raw not in schema["enum"]:
        raise ToolCallError(f"{key}={raw!r} is not allowed; choose one of {', '.join(map(str, schema['enum']))}.")
    if "integer" in kinds:
        try:
            return int(raw)
        except ValueError as exc:
            raise ToolCallError(f"{key}={raw!r} must be a whole number, e.g. {key}=30.") from exc
    if "number" in kinds:
        try:
            return float(raw)
        except ValueError as exc:
            raise ToolCallError(f"{key}={raw!r} must be a number, e.g. {key}=7.5.") from exc
    if "boolean" in kinds:
        lowered = raw.strip().lower()
        if lowered not in {"true", "false"}:
            raise ToolCallError(f"{key}={raw!r} must be true or false.")
        return lowered == "true"
    if "object" in kinds or "array" in kinds:
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"{key} must be JSON: {exc.msg}.") from exc
    return raw


async def call_tool(kernel: Kernel, name: str, pairs: list[str]) -> str:
    """Invoke a function through the kernel (so every filter runs) and return its result text.

    Raises:
        ToolCallError: a bad name or bad arguments, or the function refused its input; the
            message is the recovery instruction the model would have seen.
    """
    function = resolve_function(kernel, name)
    arguments = parse_arguments(function, pairs)
    try:
        result = await kernel.invoke(function, KernelArguments(**arguments))
    except Exception as exc:  # SK wraps function errors; surface ours, never a traceback.
        cause = _pumpops_cause(exc)
        if cause is None:
            raise
        raise ToolCallError(str(cause)) from exc
    return "" if result is None else str(result.value)


def _pumpops_cause(exc: BaseException) -> PumpOpsError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PumpOpsError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
