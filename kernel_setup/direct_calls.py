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

from core.errors import PumpOpsError
from governance.audit_log import RejectionRecorder
from governance.identity import current_call
from kernel_setup.arguments import usage
from kernel_setup.errors import ToolCallError


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

    Values that look like JSON objects or arrays are parsed as JSON; everything else stays text
    and is typed by the argument filter inside the kernel, so a refusal is audited like any call.

    Raises:
        ToolCallError: a malformed pair or a repeated key.
    """
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ToolCallError(f"Argument {pair!r} is not key=value. Parameters: {usage(function.metadata)}.")
        if key in values:
            raise ToolCallError(f"Parameter {key!r} is given twice.")
        values[key] = _maybe_json(raw)
    return values


def _maybe_json(raw: str) -> Any:
    if raw.lstrip().startswith(("{", "[")):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


async def call_tool(kernel: Kernel, name: str, pairs: list[str], rejections: RejectionRecorder | None = None) -> str:
    """Invoke a function through the kernel (so every filter runs) and return its result text.

    A name that resolves to no function, or arguments that cannot be read, never reach the kernel's
    filters; they are recorded through ``rejections`` so the audit trail has no gaps.

    Raises:
        ToolCallError: a bad name or bad arguments, or the function refused its input; the
            message is the recovery instruction the model would have seen.
    """
    try:
        function = resolve_function(kernel, name)
        arguments = parse_arguments(function, pairs)
    except ToolCallError as exc:
        if rejections is not None:
            await rejections.record_rejected(name, {"raw": pairs}, str(exc), current_call())
        raise
    try:
        kernel_arguments = KernelArguments()
        kernel_arguments.update(arguments)  # never KernelArguments(**...): 'settings' there means execution settings
        result = await kernel.invoke(function, kernel_arguments)
    except Exception as exc:  # SK wraps function errors; surface ours, never a traceback.
        cause = pumpops_cause(exc)
        if cause is None:
            raise
        raise ToolCallError(str(cause)) from exc
    return "" if result is None else str(result.value)


def pumpops_cause(exc: BaseException) -> PumpOpsError | None:
    """The PumpOps error behind ``exc`` (SK wraps function errors in ``KernelInvokeException``), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PumpOpsError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
