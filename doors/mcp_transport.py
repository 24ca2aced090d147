"""How the MCP door's HTTP transport binds its port and checks Host and Origin headers (never off)."""

from __future__ import annotations

import errno
import re
import socket

from mcp.server.transport_security import TransportSecuritySettings

from kernel_setup.errors import McpListenError
from kernel_setup.settings import McpSettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""Host names every server accepts in Host and Origin headers, on any port."""

_LISTEN_BACKLOG = 2048  # uvicorn's default
_PORT_SUFFIX = re.compile(r":(?:[0-9]+|\*)$")


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


def _any_port(entries: tuple[str, ...]) -> list[str]:
    """Settings entries as the SDK matches them: one without a port also as ``entry:*``."""
    return [form for entry in entries for form in ((entry,) if _PORT_SUFFIX.search(entry) else (entry, f"{entry}:*"))]
