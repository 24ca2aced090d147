r"""How the MCP door reads messages off the wire, binds its HTTP port and checks Host and Origin headers.

The SDK parses each stdio line with pydantic and each HTTP body with ``json.loads``, and both fail badly on
hostile input: pydantic refuses a lone surrogate escape (``"\\ud800"``) and the SDK's stdio reader then
drops the line unanswered; ``json.loads`` runs out of recursion on a body nested 50,000 levels deep and
the SDK answers a bare 500. So both transports read each message here first, the same way:

- nesting is bounded before anything parses: an array or object opening deeper than `MAX_NESTING` + 1
  levels is cut to ``null`` (`bound_nesting`), and the server refuses a call nested past `MAX_NESTING`,
  naming the argument, so no parser recurses far and the call is still answered and audited;
- the text is parsed with ``json.loads``, as the SDK's HTTP transport does, so a lone surrogate or a
  number such as ``1e999`` reaches the server's checks instead of vanishing in the transport;
- text that is not JSON is answered with a JSON-RPC parse error (-32700, id null), and JSON that is not a
  JSON-RPC message with an invalid-request error (-32600) carrying its id when it has one.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import re
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.errors import PumpOpsError
from kernel_setup.errors import McpListenError
from kernel_setup.settings import McpSettings

MAX_NESTING = 32
"""Most levels of arrays and objects in one message, the JSON-RPC envelope included (a call's arguments are level 3)."""

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""Host names every server accepts in Host and Origin headers, on any port."""

_LISTEN_BACKLOG = 2048  # uvicorn's default
_READ_INLINE = 64 * 1024  # longer messages are bounded and parsed in a worker thread, off the event loop
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)  # a string (skipped whole) or a bracket
_PORT_SUFFIX = re.compile(r":(?:[0-9]+|\*)$")
_SURROGATE = re.compile("[\ud800-\udfff]")
_T = TypeVar("_T")
_Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class UnreadableMessageError(PumpOpsError):
    """A message on the wire is not JSON, or not a JSON-RPC message; it is answered with a JSON-RPC error."""

    def __init__(self, message: str, code: int, request_id: str | int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id

    def response_text(self) -> str:
        """The JSON-RPC error response for it (``id`` null when the message's id could not be read)."""
        error = {"code": self.code, "message": str(self)}
        return json.dumps({"jsonrpc": "2.0", "id": self.request_id, "error": error}, separators=(",", ":"))


def bound_nesting(text: str, limit: int = MAX_NESTING + 1) -> str:
    """``text`` with every array or object that opens deeper than ``limit`` levels replaced by ``null``.

    Brackets inside strings do not count. Text with no more than ``limit`` brackets cannot nest that deep
    and comes back as it is, unscanned. Text that is not JSON stays not JSON, and ``json.loads`` stops at
    its first error before nesting deeper than ``limit``.
    """
    if text.count("[") + text.count("{") <= limit:
        return text
    kept: list[str] = []
    depth = 0
    resume = 0
    cut = False
    for token in _TOKEN.finditer(text):
        char = text[token.start()]
        if char == '"':
            continue
        if char in "[{":
            depth += 1
            if depth == limit + 1:
                kept.append(text[resume : token.start()])
                kept.append("null")
                cut = True
        else:
            if depth == limit + 1:
                resume = token.end()
            depth -= 1
    if not cut:
        return text
    if depth <= limit:  # else a cut container never closes: the text ends at its null, and fails to parse
        kept.append(text[resume:])
    return "".join(kept)


def read_json(text: str) -> Any:
    """The JSON value of ``text``, nested at most `MAX_NESTING` + 1 levels (deeper parts are ``null``).

    Raises:
        UnreadableMessageError: the text is not JSON (code -32700).
    """
    return _parse(bound_nesting(text))


def read_message(text: str) -> types.JSONRPCMessage:
    """One JSON-RPC message from its text, read with `read_json`.

    Raises:
        UnreadableMessageError: the text is not JSON (-32700) or not a JSON-RPC 2.0 message (-32600).
    """
    value = read_json(text)
    try:
        return types.JSONRPCMessage.model_validate(value)
    except ValidationError as exc:
        raise UnreadableMessageError(
            "Invalid request: not a JSON-RPC 2.0 request, notification or response "
            '(e.g. {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).',
            types.INVALID_REQUEST,
            _request_id(value),
        ) from exc


@asynccontextmanager
async def stdio_streams(
    stdin: anyio.AsyncFile[str] | None = None, stdout: anyio.AsyncFile[str] | None = None
) -> AsyncIterator[_Streams]:
    """The SDK's ``stdio_server``, reading each line with `read_message` so every request is answered.

    A line that is not a JSON-RPC message is answered with its JSON-RPC error here, instead of reaching the
    server as an exception it can only log.
    """
    # As the SDK does: re-wrap the binary streams so the encoding is UTF-8 whatever the platform says.
    stdin = stdin or anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    stdout = stdout or anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage | str](0)
    refusals = write_stream.clone()

    async def read_lines() -> None:
        async with incoming, refusals:
            try:
                async for line in stdin:
                    if not line.strip():
                        continue
                    try:
                        message = await _off_loop(read_message, line)
                    except UnreadableMessageError as exc:
                        await refusals.send(exc.response_text())
                        continue
                    await incoming.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # the server stopped first

    async def write_lines() -> None:
        async with outgoing:
            async for item in outgoing:
                await stdout.write((item if isinstance(item, str) else _message_text(item.message)) + "\n")
                await stdout.flush()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_lines)
        tasks.start_soon(write_lines)
        yield read_stream, write_stream


class BoundedJsonBodies:
    """ASGI middleware for the MCP endpoint: a POSTed body is read with `read_json` before the SDK parses it.

    A body the SDK could not parse safely (nested too deep, not UTF-8, a number with thousands of digits) is
    either cut to `MAX_NESTING` + 1 levels and passed on, or answered here with a JSON-RPC parse error and
    HTTP 400, instead of a 500. Host and Origin are checked first, so a foreign page learns nothing from it.
    Put it inside a body-size limit: it holds the whole body in memory.
    """

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check Host and Origin, then read, bound and pass on (or refuse) a POSTed body."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        refused = await self.security.validate_request(Request(scope), is_post=True)
        if refused is not None:
            await refused(scope, receive, send)
            return
        messages, body = await _read_body(receive)
        if body is not None:
            try:
                bounded = await _off_loop(_bounded_body, body)
            except UnreadableMessageError as exc:
                await Response(exc.response_text(), status_code=400, media_type="application/json")(
                    scope, receive, send
                )
                return
            if bounded is not body:
                messages = [{"type": "http.request", "body": bounded, "more_body": False}]
                scope = {**scope, "headers": _with_content_length(scope["headers"], len(bounded))}

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def transport_security(host: str, port: int, settings: McpSettings) -> TransportSecuritySettings:
    """The Host and Origin headers an HTTP server on ``host:port`` accepts; DNS-rebinding protection is never off.

    Accepted: loopback names on any port, the listening address itself, and `McpSettings.allowed_hosts` /
    `McpSettings.allowed_origins` (an entry without a port accepts any port).
    """
    bound = url_host(host).lower()
    hosts = [f"{name}:*" for name in LOOPBACK_HOSTS] + [f"{bound}:{port}"]
    origins = [f"http://{name}:*" for name in LOOPBACK_HOSTS] + [f"http://{bound}:{port}"]
    if port == 80:  # clients leave the scheme's default port out of both headers
        hosts.append(bound)
        origins.append(f"http://{bound}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *_any_port(settings.allowed_hosts)],
        allowed_origins=[*origins, *_any_port(settings.allowed_origins)],
    )


def listen(host: str, port: int) -> list[socket.socket]:
    """TCP sockets listening on ``host:port`` (one per address a name resolves to, as uvicorn binds them).

    Binding before anything else lets the CLI report a busy port before it claims to serve.

    Raises:
        McpListenError: the port is in use, the address is not this machine's, or the name does not resolve.
    """
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise McpListenError(
            f"Cannot listen on {host!r}: the name does not resolve ({exc.strerror}). "
            "Use an address such as 127.0.0.1 with --host or the Mcp.Host setting."
        ) from exc
    listeners: list[socket.socket] = []
    try:
        for family, address in dict.fromkeys((info[0], info[4]) for info in found):
            listeners.append(socket.create_server(address, family=family, backlog=_LISTEN_BACKLOG))
    except OSError as exc:
        for listener in listeners:
            listener.close()
        raise _listen_error(host, port, exc) from exc
    return listeners


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.0/8``, ``::1``); names are not resolved."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """``host`` as a URL or Host header writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _listen_error(host: str, port: int, exc: OSError) -> McpListenError:
    where = f"{url_host(host)}:{port}"
    choose = "Choose another port with --port PORT or the Mcp.Port setting"
    if exc.errno == errno.EADDRINUSE:
        return McpListenError(
            f"Port {port} is already in use on {url_host(host)} (another MCP server or another program). "
            f"{choose}, e.g. --port {port + 1 if port < 65535 else port - 1}."
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return McpListenError(
            f"Cannot listen on {where}: {host} is not an address of this machine. "
            "Use one of its addresses with --host or the Mcp.Host setting, e.g. --host 127.0.0.1."
        )
    return McpListenError(f"Cannot listen on {where}: {exc.strerror or exc}. {choose}.")


async def _off_loop(read: Callable[[Any], _T], data: str | bytes) -> _T:
    """``read(data)``, in a worker thread when ``data`` is long: a hostile 4 MiB body takes about a second to scan."""
    return read(data) if len(data) <= _READ_INLINE else await anyio.to_thread.run_sync(read, data)


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and its whole body (None when the client left before sending it)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return messages, b"".join(chunks)


def _bounded_body(body: bytes) -> bytes:
    """``body`` itself when `read_json` reads it unchanged, else its text cut by `bound_nesting`, as UTF-8.

    Raises:
        UnreadableMessageError: the body is not JSON text.
    """
    try:
        text = body.decode(json.detect_encoding(body), "surrogatepass")  # as json.loads decodes bytes
    except UnicodeDecodeError as exc:
        raise UnreadableMessageError(
            "Parse error: the body is not UTF-8 text; send JSON encoded as UTF-8.", types.PARSE_ERROR
        ) from exc
    bounded = bound_nesting(text)
    _parse(bounded)
    return body if bounded is text else bounded.encode("utf-8", "surrogatepass")


def _parse(bounded: str) -> Any:
    try:
        return json.loads(bounded)
    except json.JSONDecodeError as exc:
        raise UnreadableMessageError(
            f"Parse error: the message is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).",
            types.PARSE_ERROR,
        ) from exc
    except ValueError as exc:  # an integer past Python's 4300-digit limit
        raise UnreadableMessageError(
            "Parse error: the message holds a number with too many digits to read.", types.PARSE_ERROR
        ) from exc


def _with_content_length(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    kept = [(name, value) for name, value in headers if name.lower() != b"content-length"]
    return [*kept, (b"content-length", str(length).encode())]


def _any_port(entries: tuple[str, ...]) -> list[str]:
    """Settings entries as the SDK matches them: one without a port also as ``entry:*``."""
    return [form for entry in entries for form in ((entry,) if _PORT_SUFFIX.search(entry) else (entry, f"{entry}:*"))]


def _request_id(value: Any) -> str | int | None:
    request_id = value.get("id") if isinstance(value, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


def _message_text(message: types.JSONRPCMessage) -> str:
    try:
        return message.model_dump_json(by_alias=True, exclude_none=True)
    except PydanticSerializationError:  # a lone surrogate in some text: JSON on the wire must be UTF-8
        data = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        return _SURROGATE.sub("\ufffd", json.dumps(data, ensure_ascii=False))
