"""What the MCP server's handler gets: ``tools/call`` requests the SDK would refuse or mangle, marked to be answered.

The SDK validates a ``tools/call`` before any handler runs, and re-serializes it on the way, so a malformed call
(no tool name, arguments that are not an object) would be refused before it could be audited, and a call whose
arguments cannot reach the kernel as sent (a non-finite number, which would arrive as null and mean "use the default";
anything nested past `MAX_NESTING`, which the transport cut to null) would run with arguments the client did not
send. `screen_calls` stands between the transport and the server: it rewrites such a call into one that carries
its recordable arguments and the reason under `MALFORMED_KEY`, which the server answers as an error and audits with
`AuditLog.record_rejected`. Any other request nested past `MAX_NESTING` is answered here with an invalid-request
error.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from doors.mcp_transport import MAX_NESTING

__all__ = ["MALFORMED_KEY", "screen_calls"]

logger = logging.getLogger(__name__)

MALFORMED_KEY = "_pumpops_malformed"
"""Set on a tools/call whose params the SDK would refuse before our handler: the arguments to audit and the reason."""
_ARGUMENT_NESTING = MAX_NESTING - 3  # the request, its params and the arguments object are the first three levels
_EXAMPLE_ARGUMENTS = '{"pump_id": "PUMP-007"}'


async def screen_calls(
    source: MemoryObjectReceiveStream[SessionMessage | Exception],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    replies: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Forward messages, rewriting ``tools/call`` params the SDK would refuse or mangle into a marked call we answer.

    Any other request nested past `MAX_NESTING` is answered here with an invalid-request error (the transport cut
    its deepest parts to ``null``, so passing it on would serve a request the client did not send).
    """
    async with source, sink:
        try:
            async for message in source:
                screened = _screen(message)
                if isinstance(screened, types.JSONRPCError):
                    await replies.send(SessionMessage(types.JSONRPCMessage(screened)))
                elif screened is not None:
                    await sink.send(screened)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the session ended first


def _screen(message: SessionMessage | Exception) -> SessionMessage | Exception | types.JSONRPCError | None:
    """``message`` to pass on (a ``tools/call`` possibly marked malformed), an error to answer, or None to drop."""
    if isinstance(message, Exception):
        return message
    request = message.message.root
    if isinstance(request, types.JSONRPCNotification) or (
        isinstance(request, types.JSONRPCRequest) and request.method != "tools/call"
    ):
        return message if _nesting(request.params, MAX_NESTING) < MAX_NESTING else _too_deep(request)
    if not isinstance(request, types.JSONRPCRequest):
        return message  # a response to a request of ours
    params = dict(request.params or {})
    params.pop(MALFORMED_KEY, None)  # only we set it
    raw_name, raw_arguments = params.get("name"), params.get("arguments")
    try:
        types.CallToolRequestParams.model_validate(params)
    except ValidationError:
        params = _marked(params, {"raw": _recordable(raw_arguments)}, _malformed_reason(raw_name, raw_arguments))
    else:
        problem = _uncarried(str(raw_name), params)
        if problem is not None:
            params = _marked(params, _recordable(raw_arguments or {}), problem)
    screened = request.model_copy(update={"params": params})
    return SessionMessage(types.JSONRPCMessage(screened), message.metadata)


def _too_deep(request: types.JSONRPCRequest | types.JSONRPCNotification) -> types.JSONRPCError | None:
    """The error answering a request nested past `MAX_NESTING`; None for a notification, which gets no answer."""
    if isinstance(request, types.JSONRPCNotification):
        logger.warning("Dropped a %s notification nested more than %d levels deep", request.method, MAX_NESTING)
        return None
    reason = f"Invalid request: {request.method} nests arrays and objects more than {MAX_NESTING} levels deep."
    return types.JSONRPCError(
        jsonrpc="2.0", id=request.id, error=types.ErrorData(code=types.INVALID_REQUEST, message=reason)
    )


def _marked(params: Mapping[str, Any], recorded: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """Params for a call answered with ``reason`` as an error and audited with ``recorded`` as its arguments."""
    name = params.get("name")
    marked: dict[str, Any] = {
        "name": name if isinstance(name, str) else "",
        MALFORMED_KEY: {"arguments": recorded, "reason": reason},
    }
    if isinstance(params.get("_meta"), dict) and _nesting(params["_meta"], MAX_NESTING) <= MAX_NESTING - 2:
        marked["_meta"] = params["_meta"]
    return marked


def _uncarried(name: str, params: Mapping[str, Any]) -> str | None:
    """Why a well-formed call's arguments cannot reach the kernel as sent, naming the argument; None when they can.

    The SDK re-serializes a request before its handler sees it, turning a non-finite number into null (which then
    means "use the default"), and the transport cut anything nested past `MAX_NESTING` to null.
    """
    arguments: Mapping[str, Any] = params.get("arguments") or {}
    if _nesting(params, MAX_NESTING) >= MAX_NESTING:
        for key, value in arguments.items():
            if _nesting(value, _ARGUMENT_NESTING) > _ARGUMENT_NESTING:
                return (
                    f"{name}: {key} nests arrays and objects more than {_ARGUMENT_NESTING} levels deep; "
                    f"arguments hold flat values, e.g. {_EXAMPLE_ARGUMENTS}."
                )
        return (
            f"The tools/call request for {name} nests arrays and objects more than {MAX_NESTING} levels deep; "
            f"send the tool name and flat arguments, e.g. {_EXAMPLE_ARGUMENTS}."
        )
    for key, value in arguments.items():
        found = _non_finite(value, str(key))
        if found is not None:
            path, number = found
            if math.isnan(number):
                return f"{name}: {path} must be a finite number; got NaN, which is not JSON. Send a finite value."
            return (
                f"{name}: {path} must be a finite number; got {'-' if number < 0 else ''}infinity (a JSON number "
                "past ±1.8e308, such as 1e999, overflows). Send a finite value."
            )
    return None


def _nesting(value: Any, cap: int) -> int:
    """Levels of arrays and objects in ``value`` (a scalar is 0), counted no further than ``cap`` + 1."""
    if not isinstance(value, dict | list):
        return 0
    if cap <= 0:
        return 1
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_nesting(child, cap - 1) for child in children), default=0)


def _non_finite(value: Any, path: str) -> tuple[str, float] | None:
    """The path and value of the first infinite or NaN number in ``value``, e.g. ``('filters[0].limit', inf)``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        items: Any = ((f"{path}.{key}", item) for key, item in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for child_path, child in items:
        found = _non_finite(child, child_path)
        if found is not None:
            return found
    return None


def _recordable(value: Any, depth: int = 0) -> Any:
    """``value`` as an audit row can keep it after the SDK's JSON round trip.

    A non-finite number becomes its text (``inf``, as the audit log writes it), and anything nested past
    `MAX_NESTING` (only an in-process client can send that) becomes a marker.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict | list) and depth >= MAX_NESTING:
        return "[nested too deep]"
    if isinstance(value, dict):
        return {key: _recordable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_recordable(item, depth + 1) for item in value]
    return value


def _malformed_reason(name: object, arguments: object) -> str:
    if not isinstance(name, str):
        return "tools/call needs the tool name as a string, e.g. 'assets-get_pump_details'. Call tools/list."
    if arguments is not None and not isinstance(arguments, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
        return (
            f"Arguments of {name} must be a JSON object of parameter names to values, e.g. "
            f'{{"pump_id": "PUMP-007"}}; got {kind.get(type(arguments), type(arguments).__name__)}.'
        )
    return f"The tools/call request for {name} is malformed; send a name and an arguments object."
