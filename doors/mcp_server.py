"""The MCP door: every kernel function as an MCP tool, over stdio or streamable HTTP.

Built on the SDK's low-level `Server`, so the tool list is `tool_definitions` verbatim and argument
checking is ours: a `tools/call` goes to `kernel.invoke` with the client's raw arguments, inside
`acting_as` the caller (over stdio and in process: the OS user running the server, proof ``os_user``, with
the client's self-declared name as an asserted label "mcp:<client>"), so the audit filter records it and the
argument filter types or refuses it exactly as for the chat. Calls refused before the kernel (an
unknown tool, arguments that are not an object or that JSON-RPC cannot carry to the kernel as sent: a
non-finite number, nesting past `MAX_NESTING`) are recorded with `AuditLog.record_rejected`;
`doors.mcp_screening` marks those the SDK would refuse or mangle before it sees them.

Messages are read off the wire by `doors.mcp_transport` (bounded nesting, every line answered), and
over HTTP the Host and Origin headers are always checked (`transport_security`).

Over stdio the client name is only a label beside the OS user. Over HTTP the principal is the bearer
token's (`doors.mcp_auth`): a static API token's name or an OAuth subject, with the client's name beside it
as an asserted label; a loopback server with no authentication configured serves unauthenticated clients
as the OS user running it with proof NONE (no role), the client's name only as a label.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import replace
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
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.message import SessionMessage
from opentelemetry.trace import Span, SpanKind
from semantic_kernel.functions import KernelArguments
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from core.errors import PumpOpsError
from doors.mcp_approvals import approval_routes
from doors.mcp_auth import Authenticator, RequireBearer, http_caller, resource_uri
from doors.mcp_screening import MALFORMED_KEY, screen_calls
from doors.mcp_transport import BoundedJsonBodies, is_loopback, listen, stdio_streams, transport_security
from governance import PrincipalError, principal_name
from governance.identity import CallContext, acting_as
from governance.principals import is_hidden
from kernel_setup.app import AppContext
from kernel_setup.direct_calls import pumpops_cause, resolve_function, tool_definitions
from kernel_setup.errors import ToolCallError
from kernel_setup.filters.audit import STATUS_KEY
from kernel_setup.local_identity import local_caller
from kernel_setup.tracing import ERROR_TYPE, JSONRPC_REQUEST_ID, MCP_METHOD, MCP_SESSION_ID, TOOL_NAME, continued
from plugins.declarations import traits_of

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

UNKNOWN_TOOL_SPAN = "tools/call (unknown tool)"
"""The server span's name for a ``tools/call`` naming no kernel function (the client's text is not used)."""

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
            tasks.start_soon(screen_calls, read_stream, send, write_stream)
            await super().run(receive, write_stream, initialization_options, raise_exceptions, stateless)
            tasks.cancel_scope.cancel()

    async def _list_tools(self) -> list[types.Tool]:
        return mcp_tools(self._app)

    async def _handle_call(self, request: types.CallToolRequest) -> types.ServerResult:
        context = self.request_context
        if context.request is None:  # stdio or in process: a local door
            call = self._local_caller(context.session)
        else:
            label, session = f"mcp:{_client_name(context.session)}", _session_id(context.request)
            # Over HTTP the principal is the bearer token's (the client's name is only a label).
            call = http_caller(context.request, label=label, session=session) or CallContext(
                principal=label, session=session, door="mcp"
            )
        params = request.params
        with acting_as(call), self._traced(params, call.session, context.request_id) as span:
            result = await self.call(params.name, params.arguments, (params.model_extra or {}).get(MALFORMED_KEY))
            if span is not None and result.isError:
                span.set_attribute(ERROR_TYPE, "tool_error")
        return types.ServerResult(result)

    def _local_caller(self, session: ServerSession) -> CallContext:
        """A local client's caller: the OS user running this server, the client's own name as an asserted label."""
        return replace(local_caller(self._app.settings, "mcp"), label=f"mcp:{_client_name(session)}")

    def _traced(
        self, params: types.CallToolRequestParams, session: str | None, request_id: types.RequestId
    ) -> AbstractContextManager[Span | None]:
        """The call's server span (when tracing is on), a child of the client's ``_meta.traceparent`` when sent."""
        tracing = self._app.tracing
        if not tracing.enabled:
            return nullcontext()
        meta = None if params.meta is None else params.meta.model_dump(by_alias=True)
        attributes = {MCP_METHOD: "tools/call", JSONRPC_REQUEST_ID: str(request_id)}
        if session is not None:
            attributes[MCP_SESSION_ID] = session
        # The span's name and tool attribute are the kernel function's own name, never the client's text: an
        # unknown tool gets a fixed name, so clients cannot mint span names or put their own text on spans.
        try:
            tool = resolve_function(self._app.kernel, params.name).fully_qualified_name
        except ToolCallError:
            return tracing.span(UNKNOWN_TOOL_SPAN, attributes, context=continued(meta), kind=SpanKind.SERVER)
        attributes[TOOL_NAME] = tool
        return tracing.span(f"tools/call {tool}", attributes, context=continued(meta), kind=SpanKind.SERVER)

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, malformed: Mapping[str, Any] | None = None
    ) -> types.CallToolResult:
        """Invoke the tool ``name`` through the kernel as the current caller; failures become ``isError`` results."""
        if malformed is not None:
            recorded = malformed.get("arguments")
            return await self._reject(
                name, recorded if isinstance(recorded, Mapping) else {"raw": recorded}, str(malformed.get("reason"))
            )
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
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def http_app(app: AppContext, host: str, port: int) -> Starlette:
    """A Starlette app serving streamable HTTP MCP at ``/mcp`` for a server listening on ``host:port``.

    The Host and Origin headers must name a loopback address, ``host:port`` itself, or an entry of
    ``Mcp.AllowedHosts`` / ``Mcp.AllowedOrigins`` (DNS-rebinding protection, whatever the address). Then a
    bearer token is required (`doors.mcp_auth`) on ``/mcp`` and the approval endpoints (`doors.mcp_approvals`)
    once authentication is configured, and always on a non-loopback address.
    """
    security = transport_security(host, port, app.settings.mcp)
    authenticator = http_authenticator(app, host, port)
    manager = StreamableHTTPSessionManager(app=PumpOpsMcpServer(app), security_settings=security)
    endpoint = RequestBodyLimitMiddleware(
        BoundedJsonBodies(StreamableHTTPASGIApp(manager), security), DEFAULT_MAX_REQUEST_BODY_SIZE
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes = [Route(MCP_PATH, endpoint=endpoint), *approval_routes(app), *authenticator.metadata_routes()]
    guard = Middleware(RequireBearer, authenticator=authenticator, audit=app.audit, security=security)
    return Starlette(routes=routes, middleware=[guard], lifespan=lifespan)


def http_authenticator(app: AppContext, host: str, port: int) -> Authenticator:
    """The bearer-token check for a server on ``host:port``, from ``Mcp.Auth`` and ``Identity``."""
    auth = app.settings.mcp.auth
    return Authenticator(
        auth,
        app.settings.identity,
        app.settings.resolve(auth.tokens_file),
        resource_uri(auth, host, port),
        remote=not is_loopback(host),
    )


def http_server(app: AppContext, host: str, port: int) -> uvicorn.Server:
    """A uvicorn server for `http_app` on ``host:port``; ``serve()`` runs it until ``should_exit`` is set."""
    config = uvicorn.Config(http_app(app, host, port), host=host, port=port, log_level="warning", lifespan="on")
    return uvicorn.Server(config)


async def serve_http(app: AppContext, host: str, port: int, *, listeners: list[socket.socket] | None = None) -> None:
    """Serve streamable HTTP MCP on ``host:port`` until interrupted, on ``listeners`` when already bound (`listen`).

    Raises:
        McpListenError: without ``listeners``, the port is in use or the address is not this machine's.
    """
    await http_server(app, host, port).serve(sockets=listeners if listeners is not None else listen(host, port))


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
