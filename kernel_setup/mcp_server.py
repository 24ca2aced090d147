"""The MCP door: every kernel function as an MCP tool, over stdio or streamable HTTP.

Built on the SDK's low-level `Server`, so the tool list is `tool_definitions` verbatim and argument
checking is ours: a `tools/call` goes to `kernel.invoke` with the client's raw arguments, inside
`acting_as(CallContext(principal="mcp:<client>", door="mcp"))`, so the audit filter records it and the
argument filter types or refuses it exactly as for the chat. Calls refused before the kernel (an
unknown tool, arguments that are not an object) are recorded with `AuditLog.record_rejected`.

The server trusts its transport: the client name in the principal is what the client says it is.
Over HTTP it listens on loopback unless told otherwise; anything else belongs behind an
authenticating proxy.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import uvicorn
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.server.fastmcp.server import StreamableHTTPASGIApp
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from semantic_kernel.functions import KernelArguments
from starlette.applications import Starlette
from starlette.routing import Route

from governance import PrincipalError, principal_name
from governance.principals import is_hidden
from kernel_setup.app import AppContext
from kernel_setup.call_context import CallContext, acting_as
from kernel_setup.direct_calls import pumpops_cause, resolve_function, tool_definitions
from kernel_setup.errors import ToolCallError
from kernel_setup.filters.audit import STATUS_KEY
from plugins.declarations import traits_of
from storage.errors import PumpOpsError

logger = logging.getLogger(__name__)

SERVER_NAME = "pumpops"
MCP_PATH = "/mcp"
STATUS_META_KEY = "pumpops/status"
"""``_meta`` key of a result whose invocation ended other than plainly ``ok`` (e.g. ``pending_approval``)."""

INSTRUCTIONS = (
    "PumpOps tools for pump stations: an asset registry (pumps, sensors, readings, alarms) and maintenance "
    "manuals. Results are compact JSON naming their subject; errors say how to recover. Writes are parked "
    "for a human to approve and answer with their status."
)

_MALFORMED = "_pumpops_malformed"  # set on a tools/call whose params the SDK would refuse before our handler
_MAX_CLIENT_NAME = 64


class PumpOpsMcpServer(Server[None, Any]):
    """A low-level MCP server whose tools are the kernel's functions, invoked through the kernel's filters."""

    def __init__(self, app: AppContext) -> None:
        super().__init__(SERVER_NAME, version=_package_version(), instructions=INSTRUCTIONS)
        self._app = app
        self.list_tools()(self._list_tools)
        # Registered directly rather than with @call_tool: the decorator validates against the input
        # schema before anything is audited, and hides the request's extra fields.
        self.request_handlers[types.CallToolRequest] = self._handle_call

    async def run(
        self,
        read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
        write_stream: MemoryObjectSendStream[SessionMessage],
        initialization_options: InitializationOptions,
        raise_exceptions: bool = False,
        stateless: bool = False,
    ) -> None:
        """Serve one connection, first marking malformed ``tools/call`` requests so they are answered and audited."""
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_screen_calls, read_stream, send)
            await super().run(receive, write_stream, initialization_options, raise_exceptions, stateless)
            tasks.cancel_scope.cancel()

    async def _list_tools(self) -> list[types.Tool]:
        return mcp_tools(self._app)

    async def _handle_call(self, request: types.CallToolRequest) -> types.ServerResult:
        context = self.request_context
        call = CallContext(
            principal=f"mcp:{_client_name(context.session)}",
            session=_session_id(context.request),
            door="mcp",
        )
        params = request.params
        with acting_as(call):
            result = await self.call(params.name, params.arguments, (params.model_extra or {}).get(_MALFORMED))
        return types.ServerResult(result)

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, malformed: Mapping[str, Any] | None = None
    ) -> types.CallToolResult:
        """Invoke the tool ``name`` through the kernel as the current caller; failures become ``isError`` results."""
        if malformed is not None:
            return await self._reject(name, {"raw": malformed.get("arguments")}, str(malformed.get("reason")))
        try:
            function = resolve_function(self._app.kernel, name)
        except ToolCallError as exc:
            return await self._reject(name, dict(arguments or {}), str(exc))
        kernel_arguments = KernelArguments()
        kernel_arguments.update(arguments or {})  # not **kwargs: a key such as "settings" must stay an argument
        try:
            result = await self._app.kernel.invoke(function, kernel_arguments)
        except Exception as exc:  # SK wraps function errors; a client gets our message, never a traceback
            cause = pumpops_cause(exc)
            if cause is None:
                logger.exception("MCP call of %s failed unexpectedly", name)
                return _error(f"{name} failed unexpectedly. Try again; if it keeps failing, check the PumpOps logs.")
            return _error(str(cause))
        value = None if result is None else result.value
        status = None if result is None else (result.metadata or {}).get(STATUS_KEY)
        return _success(value, None if status is None else str(getattr(status, "value", status)))

    async def _reject(self, name: str, arguments: Mapping[str, Any], reason: str) -> types.CallToolResult:
        try:  # rejections are recorded whatever Audit.Enabled says: they are security-relevant
            await self._app.audit.record_rejected(name, arguments, reason)
        except PumpOpsError as exc:
            return _error(str(exc))
        return _error(reason)


def mcp_tools(app: AppContext) -> list[types.Tool]:
    """Every kernel function as an MCP tool: the model's schema verbatim, hints from its read/write declaration."""
    tools = []
    for definition in tool_definitions(app.kernel):
        function = definition["function"]
        traits = traits_of(resolve_function(app.kernel, function["name"]))
        tools.append(
            types.Tool(
                name=function["name"],
                description=function.get("description"),
                inputSchema=function["parameters"],
                annotations=types.ToolAnnotations(
                    readOnlyHint=traits.read_only,
                    destructiveHint=traits.destructive,
                    idempotentHint=traits.idempotent,
                    # Our tools touch only the registry, the manuals index and the approval queue.
                    openWorldHint=False,
                ),
            )
        )
    return tools


async def serve_stdio(app: AppContext) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes the stream."""
    server = PumpOpsMcpServer(app)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app(app: AppContext, *, loopback_only: bool = True) -> Starlette:
    """A Starlette app serving streamable HTTP MCP at ``/mcp``.

    With ``loopback_only`` the Host and Origin headers must name a loopback address (DNS-rebinding
    protection); a server exposed through a proxy sees the proxy's host names, so it is off then.
    """
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if loopback_only:
        security = TransportSecuritySettings(
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=PumpOpsMcpServer(app), security_settings=security)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)


def http_server(app: AppContext, host: str, port: int, *, loopback_only: bool = True) -> uvicorn.Server:
    """A uvicorn server for `http_app` on ``host:port``; ``serve()`` runs it until ``should_exit`` is set."""
    config = uvicorn.Config(
        http_app(app, loopback_only=loopback_only), host=host, port=port, log_level="warning", lifespan="on"
    )
    return uvicorn.Server(config)


async def serve_http(app: AppContext, host: str, port: int, *, loopback_only: bool = True) -> None:
    """Serve streamable HTTP MCP on ``host:port`` until interrupted."""
    await http_server(app, host, port, loopback_only=loopback_only).serve()


async def _screen_calls(
    source: MemoryObjectReceiveStream[SessionMessage | Exception],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Forward messages, rewriting ``tools/call`` params the SDK would refuse into a marked call we answer."""
    async with source, sink:
        try:
            async for message in source:
                await sink.send(_screen(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the session ended first


def _screen(message: SessionMessage | Exception) -> SessionMessage | Exception:
    if isinstance(message, Exception):
        return message
    request = message.message.root
    if not isinstance(request, types.JSONRPCRequest) or request.method != "tools/call":
        return message
    params = dict(request.params or {})
    params.pop(_MALFORMED, None)  # only we set it
    try:
        types.CallToolRequestParams.model_validate(params)
    except ValidationError:
        raw_name, raw_arguments = params.get("name"), params.get("arguments")
        marked: dict[str, Any] = {
            "name": raw_name if isinstance(raw_name, str) else "",
            _MALFORMED: {"arguments": raw_arguments, "reason": _malformed_reason(raw_name, raw_arguments)},
        }
        if isinstance(params.get("_meta"), dict):
            marked["_meta"] = params["_meta"]
        params = marked
    screened = request.model_copy(update={"params": params})
    return SessionMessage(types.JSONRPCMessage(screened), message.metadata)


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


def _success(value: Any, status: str | None) -> types.CallToolResult:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    try:
        parsed = json.loads(text)
    except (TypeError, ValueError):
        parsed = None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structuredContent=parsed if isinstance(parsed, dict) else None,
        isError=False,
        _meta=None if status is None else {STATUS_META_KEY: status},
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], isError=True)


def _client_name(session: ServerSession) -> str:
    """The client's self-declared name, made a valid principal name by `principal_name` (as at every door).

    Hidden characters are dropped rather than refused (a client cannot be asked to retype its name); a name
    that is still refused (letters of mixed scripts, say) becomes "client".
    """
    params = session.client_params
    raw = params.clientInfo.name if params is not None else ""
    visible = "".join(ch for ch in raw if ch.isprintable() and not is_hidden(ch))[:_MAX_CLIENT_NAME]
    try:
        return principal_name(visible)
    except PrincipalError:
        return "client"


def _session_id(request: object) -> str | None:
    headers = getattr(request, "headers", None)  # a Starlette request over HTTP; None over stdio
    return None if headers is None else headers.get(MCP_SESSION_ID_HEADER)


def _package_version() -> str:
    try:
        return version("pumpops")
    except PackageNotFoundError:
        return "0"
