"""How the MCP door's HTTP transport checks Host and Origin headers (DNS-rebinding protection, never off)."""

from __future__ import annotations

import re

from mcp.server.transport_security import TransportSecuritySettings

from kernel_setup.settings import McpSettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""Host names every server accepts in Host and Origin headers, on any port."""

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


def url_host(host: str) -> str:
    """``host`` as a URL or Host header writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _any_port(entries: tuple[str, ...]) -> list[str]:
    """Settings entries as the SDK matches them: one without a port also as ``entry:*``."""
    return [form for entry in entries for form in ((entry,) if _PORT_SUFFIX.search(entry) else (entry, f"{entry}:*"))]
