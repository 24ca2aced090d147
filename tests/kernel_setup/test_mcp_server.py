"""The MCP door, driven by the official client: stdio (a real `pumpops mcp` process), streamable HTTP, in memory."""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import typer
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_client_server_memory_streams, create_connected_server_and_client_session
from mcp.shared.message import SessionMessage
from typer.testing import CliRunner

from kernel_setup import AppContext
from kernel_setup.cli import main as cli_main
from kernel_setup.cli.mcp_cmd import is_loopback, mcp_command
from kernel_setup.direct_calls import resolve_function, tool_definitions
from kernel_setup.mcp_server import PumpOpsMcpServer, http_server
from plugins.declarations import traits_of

REPO = Path(__file__).resolve().parents[2]
CLIENT = types.Implementation(name="pumpops-tests", version="1.0")
PRINCIPAL = "mcp:pumpops-tests"
INJECTION = "PUMP-007' OR '1'='1"
WAIT = 30  # seconds: an upper bound on any single exchange, never a synchronisation sleep

# The real CLI entry with the mcp command mounted the way main.py mounts its commands.
CLI_CODE = (
    "import typer; from kernel_setup.cli import main; from kernel_setup.cli.mcp_cmd import mcp_command; "
    "app = typer.Typer(); app.callback()(main.root); app.command('mcp')(mcp_command); app()"
)


def audit_rows(db_path: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db_path) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("SELECT * FROM audit_log ORDER BY id")]


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@asynccontextmanager
async def in_memory_client(app: AppContext) -> AsyncIterator[ClientSession]:
    async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=CLIENT) as session:
        yield session


# --- stdio: a real `pumpops mcp` process -------------------------------------------------------------------


async def test_stdio_server_lists_the_kernel_tools_and_audits_every_call(app: AppContext, tmp_path: Path) -> None:
    settings = tmp_path / "stdio.json"
    db_path = tmp_path / "stdio.db"
    settings.write_text(json.dumps({"Database": {"Path": str(db_path)}, "Qdrant": {"Path": ":memory:"}}))
    params = StdioServerParameters(
        command=sys.executable, args=["-c", CLI_CODE, "--settings", str(settings), "mcp"], cwd=str(REPO)
    )
    with (tmp_path / "stderr.log").open("w") as errlog, anyio.fail_after(WAIT):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=CLIENT) as session,
        ):
            await session.initialize()
            listed = (await session.list_tools()).tools
            details = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007"})
            bad = await session.call_tool("assets-list_pumps", {"status": "running"})
            unknown = await session.call_tool("assets-drain_tank", {})
            injected = await session.call_tool("assets-get_pump_details", {"pump_id": INJECTION})

    names = {tool.name for tool in listed}
    assert {"assets-get_pump_details", "docs-search_documentation"} <= names
    expected = {d["function"]["name"]: d["function"] for d in tool_definitions(app.kernel)}
    assert {tool.name: tool.inputSchema for tool in listed} == {n: f["parameters"] for n, f in expected.items()}
    hints = {tool.name: tool.annotations for tool in listed}
    for name in ("assets-get_pump_details", "assets-list_pumps", "docs-search_documentation"):
        assert hints[name] == types.ToolAnnotations(
            readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
        )

    assert not details.isError and details.structuredContent is not None
    assert details.structuredContent["pump_id"] == "PUMP-007"
    assert json.loads(text_of(details)) == details.structuredContent

    assert bad.isError and "use one of online, offline, maintenance" in text_of(bad)
    assert unknown.isError and "Unknown function 'assets-drain_tank'" in text_of(unknown)
    assert injected.isError and "No pump found" in text_of(injected)
    assert injected.structuredContent is None and "Station-" not in text_of(injected)

    rows = audit_rows(db_path)
    assert [(r["function"], r["outcome"]) for r in rows] == [
        ("assets-get_pump_details", "ok"),
        ("assets-list_pumps", "rejected"),
        ("assets-drain_tank", "rejected"),
        ("assets-get_pump_details", "error"),
    ]
    assert all(r["principal"] == PRINCIPAL and r["door"] == "mcp" for r in rows)
    assert json.loads(rows[3]["arguments"]) == {"pump_id": INJECTION}


# --- in memory: the same server object, for the finer points ----------------------------------------------


async def test_annotations_follow_each_functions_read_or_write_declaration(app: AppContext) -> None:
    async with in_memory_client(app) as session:
        listed = (await session.list_tools()).tools
    assert listed, "no tools listed"
    for tool in listed:
        traits = traits_of(resolve_function(app.kernel, tool.name))
        assert tool.annotations is not None
        assert (tool.annotations.readOnlyHint, tool.annotations.destructiveHint, tool.annotations.idempotentHint) == (
            traits.read_only,
            traits.destructive,
            traits.idempotent,
        ), tool.name


async def test_tool_descriptions_are_the_ones_the_model_sees(app: AppContext) -> None:
    async with in_memory_client(app) as session:
        listed = (await session.list_tools()).tools
    expected = {d["function"]["name"]: d["function"]["description"] for d in tool_definitions(app.kernel)}
    assert {tool.name: tool.description for tool in listed} == expected


async def test_a_read_returns_structured_content_and_its_json_text(app: AppContext) -> None:
    async with in_memory_client(app) as session:
        result = await session.call_tool(
            "sensors-get_sensor_trend", {"pump_id": "PUMP-004", "sensor_type": "vibration"}
        )
    assert not result.isError
    assert result.structuredContent is not None and result.structuredContent["pump_id"] == "PUMP-004"
    assert json.loads(text_of(result)) == result.structuredContent


async def test_string_values_are_typed_by_our_argument_check_not_refused_by_the_sdk(app: AppContext) -> None:
    async with in_memory_client(app) as session:
        result = await session.call_tool(
            "sensors-get_sensor_trend", {"pump_id": "PUMP-004", "sensor_type": "vibration", "days": "14"}
        )
    assert not result.isError, text_of(result)
    assert result.structuredContent is not None and result.structuredContent["window_days"] == 14


async def test_missing_and_unknown_parameters_are_rejected_with_the_valid_ones(app: AppContext) -> None:
    async with in_memory_client(app) as session:
        missing = await session.call_tool("assets-get_pump_details", {})
        extra = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007", "settings": {"x": 1}})
    assert missing.isError and "needs 'pump_id'" in text_of(missing)
    assert extra.isError and "has no parameter(s) 'settings'" in text_of(extra)
    rows = [r for r in await app.audit.tail(10) if r.door == "mcp"]
    assert [r.outcome.value for r in rows] == ["rejected", "rejected"]
    assert rows[1].arguments == {"pump_id": "PUMP-007", "settings": {"x": 1}}


async def test_arguments_that_are_not_an_object_are_answered_and_audited(app: AppContext) -> None:
    server = PumpOpsMcpServer(app)
    async with create_client_server_memory_streams() as ((client_read, client_write), (server_read, server_write)):

        async def exchange(message: types.JSONRPCRequest | types.JSONRPCNotification) -> dict[str, Any] | None:
            await client_write.send(SessionMessage(types.JSONRPCMessage(message)))
            if isinstance(message, types.JSONRPCNotification):
                return None
            reply = await client_read.receive()
            assert isinstance(reply, SessionMessage)
            return reply.message.model_dump(by_alias=True, exclude_none=True)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, server_read, server_write, server.create_initialization_options())
            with anyio.fail_after(WAIT):
                init = types.InitializeRequestParams(
                    protocolVersion=types.LATEST_PROTOCOL_VERSION,
                    capabilities=types.ClientCapabilities(),
                    clientInfo=CLIENT,
                ).model_dump(by_alias=True, exclude_none=True)
                await exchange(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params=init))
                await exchange(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
                call = {"name": "assets-get_pump_details", "arguments": ["PUMP-007"]}
                reply = await exchange(types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/call", params=call))
                forged = {"name": "assets-get_pump_details", "arguments": {"pump_id": "PUMP-007"}}
                forged["_pumpops_malformed"] = {"reason": "client-made"}
                honest = await exchange(types.JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params=forged))
            tasks.cancel_scope.cancel()

    assert reply is not None and reply["result"]["isError"] is True
    assert "must be a JSON object" in reply["result"]["content"][0]["text"]
    assert honest is not None and honest["result"]["isError"] is False  # a client cannot forge the marker
    rows = [r for r in await app.audit.tail(10) if r.door == "mcp"]
    assert (rows[0].function, rows[0].outcome.value, rows[0].principal) == (
        "assets-get_pump_details",
        "rejected",
        PRINCIPAL,
    )
    assert rows[0].arguments == {"raw": ["PUMP-007"]}


async def test_a_status_reported_by_a_filter_reaches_the_client_in_meta(app: AppContext) -> None:
    from semantic_kernel.filters.filter_types import FilterTypes
    from semantic_kernel.functions.function_result import FunctionResult

    async def park(context: Any, next: Any) -> None:
        context.result = FunctionResult(
            function=context.function.metadata,
            value=json.dumps({"status": "pending_approval", "approval_id": "A-1"}),
            metadata={"pumpops_status": "pending_approval", "pumpops_detail": "A-1"},
        )

    app.kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, park)
    async with in_memory_client(app) as session:
        result = await session.call_tool("assets-get_system_summary", {})
    assert not result.isError
    assert result.structuredContent == {"status": "pending_approval", "approval_id": "A-1"}
    assert result.meta == {"pumpops/status": "pending_approval"}
    row = (await app.audit.tail(1))[0]
    assert (row.outcome.value, row.principal, row.door) == ("pending_approval", PRINCIPAL, "mcp")


# --- streamable HTTP ---------------------------------------------------------------------------------------


async def test_http_server_on_loopback_answers_tools_list_and_records_the_mcp_session(app: AppContext) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # connections queue here until uvicorn accepts them: no start-up race
    port = listener.getsockname()[1]
    server = http_server(app, "127.0.0.1", port)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: server.serve(sockets=[listener]))
            with anyio.fail_after(WAIT):
                async with (
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, session_id),
                    ClientSession(read, write, client_info=CLIENT) as session,
                ):
                    await session.initialize()
                    listed = (await session.list_tools()).tools
                    result = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007"})
                    mcp_session = session_id()
                async with httpx.AsyncClient() as plain:
                    rebinding = await plain.post(
                        f"http://127.0.0.1:{port}/mcp", headers={"Host": "evil.example"}, json={}
                    )
            server.should_exit = True
    finally:
        listener.close()

    assert {"assets-get_pump_details", "docs-search_documentation"} <= {tool.name for tool in listed}
    assert result.structuredContent is not None and result.structuredContent["pump_id"] == "PUMP-007"
    row = (await app.audit.tail(1))[0]
    assert (row.principal, row.door, row.session) == (PRINCIPAL, "mcp", mcp_session)
    assert mcp_session
    assert rebinding.status_code == 421  # a foreign Host header is refused (DNS-rebinding protection)


# --- the command line --------------------------------------------------------------------------------------


def cli_app() -> typer.Typer:
    app = typer.Typer()
    app.callback()(cli_main.root)
    app.command("mcp")(mcp_command)
    return app


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "pumps.example.com", "::"])
def test_a_non_loopback_host_is_refused_without_allow_remote(settings_file: Path, host: str) -> None:
    result = CliRunner().invoke(cli_app(), ["--settings", str(settings_file), "mcp", "--http", "--host", host])
    assert result.exit_code == 2
    output = " ".join((result.output + (result.stderr if result.stderr_bytes is not None else "")).split())
    assert "not a loopback address" in output and "authenticating proxy" in output and "--allow-remote" in output


def test_host_and_port_apply_to_http_only(settings_file: Path) -> None:
    result = CliRunner().invoke(cli_app(), ["--settings", str(settings_file), "mcp", "--port", "9000"])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
        ("example.com", False),
        ("::", False),
    ],
)
def test_loopback_means_localhost_and_loopback_addresses_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("client_name", "principal"),
    [
        ("\u202e\uff45\uff56\uff45\u200b\x1b", "mcp:eve"),  # hidden characters dropped, fullwidth letters folded
        ("\u0430lice", "mcp:client"),  # Cyrillic a in a Latin name: refused, so no look-alike identity
    ],
)
async def test_the_mcp_client_name_goes_through_the_same_principal_check_as_every_door(
    app: AppContext, client_name: str, principal: str
) -> None:
    client = types.Implementation(name=client_name, version="1.0")
    async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=client) as session:
        result = await session.call_tool("assets-get_system_summary", {})
    assert not result.isError
    row = (await app.audit.tail(1))[0]
    assert (row.principal, row.door) == (principal, "mcp")
