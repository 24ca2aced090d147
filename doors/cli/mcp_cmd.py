"""`pumpops mcp`: serve every kernel function as an MCP tool, over stdio or streamable HTTP."""

from __future__ import annotations

import socket
from collections.abc import Coroutine
from typing import Any

import typer

from doors.cli.common import CliState, fail, run, state
from doors.mcp_auth import auth_configured
from doors.mcp_server import MCP_PATH, serve_http, serve_stdio
from doors.mcp_transport import is_loopback, listen, url_host
from kernel_setup.app import open_app
from kernel_setup.errors import McpListenError
from kernel_setup.settings import Settings

REMOTE_WARNING = (
    "Every request to {address} must carry a bearer token (Mcp.Auth), but plain HTTP carries it in the clear: "
    "serve it behind a TLS-terminating or authenticating proxy, set Mcp.Auth.ResourceUri to the URL clients "
    "use, and firewall the port."
)
NO_AUTH = (
    "Refusing --allow-remote on {address}: no authentication is configured, so any client that reaches it "
    "could call every tool. Create a token with `pumpops tokens create NAME --role operator` (tokens file "
    "{tokens}) or set Mcp.Auth.Issuer to accept OAuth access tokens, then start again."
)
NO_RESOURCE_URI = (
    "Refusing to listen on {address} with Mcp.Auth.Issuer set but no Mcp.Auth.ResourceUri: the audience every JWT "
    "must carry would default to http://{address}/mcp, an address no client uses. Set Mcp.Auth.ResourceUri to the "
    "URL clients reach this server at (e.g. https://pumps.example.com/mcp, or PUMPOPS_Mcp__Auth__ResourceUri), "
    "then start again."
)
HOSTS_NOTE = (
    "Requests must name this address, a loopback address or an Mcp.AllowedHosts entry in their Host header "
    "(now: {hosts}), and a browser's Origin must be loopback or in Mcp.AllowedOrigins (now: {origins})."
)


def mcp_command(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
    host: str | None = typer.Option(None, "--host", help="HTTP address to listen on (default: Mcp.Host)."),
    port: int | None = typer.Option(
        None, "--port", min=1, max=65535, help="HTTP port to listen on (default: Mcp.Port)."
    ),
    allow_remote: bool = typer.Option(
        False,
        "--allow-remote",
        help="Allow a non-loopback --host; needs authentication (a tokens file or Mcp.Auth.Issuer) and belongs "
        "behind a TLS proxy. Host and Origin checks stay on: list the names clients use in Mcp.AllowedHosts / "
        "Mcp.AllowedOrigins.",
    ),
) -> None:
    """Serve the PumpOps tools over MCP; every call passes the kernel's audit and approval filters.

    Without --http the server speaks MCP on stdin/stdout (for an MCP client that starts it); with --http it
    serves streamable HTTP at http://HOST:PORT/mcp, on 127.0.0.1 unless told otherwise. Over HTTP every request
    needs a bearer token once a tokens file exists (`pumpops tokens create`) or Mcp.Auth.Issuer is set; a
    loopback server with neither serves unauthenticated clients, which can read and propose but never approve.

    Example: pumpops --settings appsettings.json mcp --http --port 8765
    """
    cli = state(ctx)
    settings = cli.settings()
    if not http:
        if host is not None or port is not None or allow_remote:
            fail(cli, "--host, --port and --allow-remote apply to --http only.")
        _serve(cli, _stdio(settings))
        return
    bind_host = (host if host is not None else settings.mcp.host).strip().strip("[]")
    bind_port = port if port is not None else settings.mcp.port
    address = f"{url_host(bind_host)}:{bind_port}"
    if not is_loopback(bind_host):
        if not allow_remote:
            fail(
                cli,
                f"Refusing to listen on {bind_host!r}, which is not a loopback address. "
                + REMOTE_WARNING.format(address=address)
                + " Pass --allow-remote to do it anyway, or use --host 127.0.0.1.",
            )
        if not auth_configured(settings):
            fail(cli, NO_AUTH.format(address=address, tokens=settings.resolve(settings.mcp.auth.tokens_file)))
        if settings.mcp.auth.issuer is not None and settings.mcp.auth.resource_uri is None:
            fail(cli, NO_RESOURCE_URI.format(address=address))
        hosts = HOSTS_NOTE.format(
            hosts=", ".join(settings.mcp.allowed_hosts) or "none",
            origins=", ".join(settings.mcp.allowed_origins) or "none",
        )
        cli.err_console.print(
            f"[bold yellow]warning:[/] {REMOTE_WARNING.format(address=address)} {hosts}", highlight=False
        )
    try:  # bound before anything claims to serve, so a busy port is one clear error (exit 2)
        listeners = listen(bind_host, bind_port)
    except McpListenError as exc:
        fail(cli, str(exc))
    _serve(cli, _http(cli, settings, listeners, bind_host, bind_port))


def _serve(cli: CliState, work: Coroutine[Any, Any, None]) -> None:
    try:
        run(cli, work)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


async def _stdio(settings: Settings) -> None:
    async with open_app(settings) as app:
        await serve_stdio(app)


async def _http(cli: CliState, settings: Settings, listeners: list[socket.socket], host: str, port: int) -> None:
    try:
        async with open_app(settings) as app:
            url = f"http://{url_host(host)}:{port}{MCP_PATH}"
            cli.err_console.print(f"PumpOps MCP server (streamable HTTP) on {url}", highlight=False)
            if not auth_configured(settings):
                cli.err_console.print(
                    "No authentication configured: loopback clients are served without a token, as this OS user "
                    "unproven (they can read and propose, never approve). `pumpops tokens create NAME --role "
                    "operator` turns tokens on.",
                    highlight=False,
                )
            await serve_http(app, host, port, listeners=listeners)
    finally:
        for listener in listeners:
            listener.close()
