"""The MCP door, driven by the official client: stdio (a real `pumpops mcp` process), streamable HTTP, in memory."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import typer
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_client_server_memory_streams, create_connected_server_and_client_session
from mcp.shared.message import SessionMessage
from typer.testing import CliRunner

from doors.cli import main as cli_main
from doors.cli.mcp_cmd import is_loopback, mcp_command
from doors.mcp_server import PumpOpsMcpServer, http_server
from governance.api_tokens import TokenFile
from governance.roles import Role
from kernel_setup import AppContext, load_settings, open_app
from kernel_setup.direct_calls import resolve_function, tool_definitions
from kernel_setup.local_identity import os_user
from plugins.declarations import traits_of
from tests.postgres_server import database_section, query

REPO = Path(__file__).resolve().parents[2]
CLIENT = types.Implementation(name="pumpops-tests", version="1.0")
PRINCIPAL = "mcp:pumpops-tests"
LOCAL = f"{os_user()} (asserted: {PRINCIPAL})"
"""A local client's audit name (stdio, in process): the OS user running the server, the client's name as a label."""
INJECTION = "PUMP-007' OR '1'='1"
WAIT = 30  # seconds: an upper bound on any single exchange, never a synchronisation sleep

# The real CLI entry with the mcp command mounted the way main.py mounts its commands.
CLI_CODE = (
    "import typer; from doors.cli import main; from doors.cli.mcp_cmd import mcp_command; "
    "app = typer.Typer(); app.callback()(main.root); app.command('mcp')(mcp_command); app()"
)


DEEP = "[" * 50_000 + "]" * 50_000
Post = Callable[[str], Awaitable[tuple[int, dict[str, Any]]]]


def call_text(request_id: int, name: str, arguments: str) -> str:
    """A tools/call request as JSON text, with the arguments object written out as given."""
    return (
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
        f'"params": {{"name": "{name}", "arguments": {arguments}}}}}'
    )


def initialize_text(request_id: int = 1) -> str:
    params = types.InitializeRequestParams(
        protocolVersion=types.LATEST_PROTOCOL_VERSION, capabilities=types.ClientCapabilities(), clientInfo=CLIENT
    ).model_dump(by_alias=True, exclude_none=True)
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params})


def clean_env() -> dict[str, str]:
    """This environment without PUMPOPS_ overrides, so a server subprocess reads only the test's settings file."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}


def audit_rows(settings: Path) -> list[dict[str, Any]]:
    return query(settings, "SELECT * FROM audit_log ORDER BY id")


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@asynccontextmanager
async def in_memory_client(app: AppContext) -> AsyncIterator[ClientSession]:
    async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=CLIENT) as session:
        yield session


# --- stdio: a real `pumpops mcp` process -------------------------------------------------------------------


async def test_stdio_server_lists_the_kernel_tools_and_audits_every_call(
    app: AppContext, tmp_path: Path, database_target: str | Path
) -> None:
    settings = tmp_path / "stdio.json"
    database = database_section(database_target, str(tmp_path / "stdio.db"))
    settings.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}}))
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

    rows = audit_rows(settings)
    assert [(r["function"], r["outcome"]) for r in rows] == [
        ("assets-get_pump_details", "ok"),
        ("assets-list_pumps", "rejected"),
        ("assets-drain_tank", "rejected"),
        ("assets-get_pump_details", "error"),
    ]
    assert all(r["principal"] == LOCAL and r["door"] == "mcp" for r in rows)
    assert json.loads(rows[3]["arguments"]) == {"pump_id": INJECTION}


class StdioLines:
    """A `pumpops mcp` process spoken to line by line, so a test can send what the SDK client never would."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)

    async def send(self, line: str) -> None:
        await self._stdin.send(line.encode() + b"\n")

    async def close(self) -> None:
        """End the input: the server stops as it does when its client goes away."""
        await self._stdin.aclose()

    async def reply(self) -> dict[str, Any]:
        """The next response (notifications such as log messages are skipped)."""
        while True:
            message = json.loads(await self._stdout.receive_until(b"\n", 1_000_000))
            if "id" in message:
                return message


async def test_a_stdio_line_the_sdk_reader_cannot_read_is_still_answered_and_audited(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = tmp_path / "stdio.json"
    database = database_section(database_target, str(tmp_path / "stdio.db"))
    settings.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}}))
    surrogate = json.dumps({"pump_id": "\ud800"})  # the JSON text {"pump_id": "\ud800"}: a lone surrogate
    assert "\\ud800" in surrogate
    trend = '{"pump_id": "PUMP-004", "sensor_type": "vibration", "days": 1e999}'
    command = [sys.executable, "-c", CLI_CODE, "--settings", str(settings), "mcp"]
    with anyio.fail_after(WAIT):
        async with await anyio.open_process(command, cwd=REPO, env=clean_env(), stderr=None) as process:
            server = StdioLines(process)
            await server.send(initialize_text())
            await server.reply()
            await server.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            await server.send(call_text(2, "assets-get_pump_details", surrogate))
            lone = await server.reply()
            await server.send("this line is not JSON")
            not_json = await server.reply()
            await server.send(call_text(3, "sensors-get_sensor_trend", trend))
            infinite = await server.reply()
            await server.send(call_text(4, "assets-get_pump_details", '{"pump_id": "PUMP-007"}'))
            after = await server.reply()
            await server.close()
            await process.wait()

    assert lone["id"] == 2 and lone["result"]["isError"] is True
    assert "unpaired surrogate" in lone["result"]["content"][0]["text"]
    assert not_json["id"] is None and not_json["error"]["code"] == types.PARSE_ERROR
    assert infinite["id"] == 3 and infinite["result"]["isError"] is True
    assert "days must be a finite number" in infinite["result"]["content"][0]["text"]
    assert after["id"] == 4 and after["result"]["isError"] is False
    rows = audit_rows(settings)
    assert [(r["function"], r["outcome"]) for r in rows] == [
        ("assets-get_pump_details", "rejected"),
        ("sensors-get_sensor_trend", "rejected"),
        ("assets-get_pump_details", "ok"),
    ]
    assert all(r["principal"] == LOCAL and r["door"] == "mcp" for r in rows)
    assert json.loads(rows[1]["arguments"])["days"] == "inf"


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


Exchange = Callable[[types.JSONRPCRequest | types.JSONRPCNotification], Awaitable[dict[str, Any] | None]]


@asynccontextmanager
async def raw_memory_session(app: AppContext) -> AsyncIterator[Exchange]:
    """An initialized in-memory session that sends messages as built (the SDK client would re-serialize them)."""
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
                yield exchange
            tasks.cancel_scope.cancel()


async def test_arguments_that_are_not_an_object_are_answered_and_audited(app: AppContext) -> None:
    async with raw_memory_session(app) as exchange:
        call = {"name": "assets-get_pump_details", "arguments": ["PUMP-007"]}
        reply = await exchange(types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/call", params=call))
        forged = {"name": "assets-get_pump_details", "arguments": {"pump_id": "PUMP-007"}}
        forged["_pumpops_malformed"] = {"reason": "client-made"}
        honest = await exchange(types.JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params=forged))

    assert reply is not None and reply["result"]["isError"] is True
    assert "must be a JSON object" in reply["result"]["content"][0]["text"]
    assert honest is not None and honest["result"]["isError"] is False  # a client cannot forge the marker
    rows = [r for r in await app.audit.tail(10) if r.door == "mcp"]
    assert (rows[0].function, rows[0].outcome.value, rows[0].principal) == (
        "assets-get_pump_details",
        "rejected",
        LOCAL,
    )
    assert rows[0].arguments == {"raw": ["PUMP-007"]}


async def test_arguments_nested_5000_deep_by_an_in_process_client_are_refused_and_recorded(app: AppContext) -> None:
    deep: Any = "PUMP-007"
    for _ in range(5_000):  # built in memory: no JSON parser bounds it first
        deep = [deep]
    async with raw_memory_session(app) as exchange:
        call = {"name": "assets-get_pump_details", "arguments": {"pump_id": deep}}
        reply = await exchange(types.JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/call", params=call))

    assert reply is not None and reply["result"]["isError"] is True
    assert "pump_id nests arrays and objects more than" in reply["result"]["content"][0]["text"]
    row = (await app.audit.tail(1))[0]
    assert (row.function, row.outcome.value) == ("assets-get_pump_details", "rejected")


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
    assert (row.outcome.value, row.principal, row.door) == ("pending_approval", LOCAL, "mcp")


# --- streamable HTTP ---------------------------------------------------------------------------------------


@asynccontextmanager
async def serving(app: AppContext, address: str = "127.0.0.1", *, told: str | None = None) -> AsyncIterator[str]:
    """A real HTTP server on ``address`` and an ephemeral port; yields its /mcp URL.

    ``told`` is the address the server is built for when it differs from the one the test binds (tests bind
    loopback only; the server's header checks follow the address it is told, as `pumpops mcp --host` does).
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((address, 0))
        listener.listen()  # connections queue here until uvicorn accepts them: no start-up race
        port = listener.getsockname()[1]
        server = http_server(app, told or address, port)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: server.serve(sockets=[listener]))
            with anyio.fail_after(WAIT):
                yield f"http://{address}:{port}/mcp"
            server.should_exit = True
    finally:
        listener.close()


def json_rpc_reply(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a streamable HTTP reply, whether sent as JSON or as an event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(next(d for d in reversed(data) if d))
    return response.json() if response.content else {}


async def post_text(
    http: httpx.AsyncClient, url: str, body: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    """POST ``body`` as written, with the headers a streamable HTTP client sends."""
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return await http.post(url, content=body.encode("utf-8"), headers={**accept, **(headers or {})})


@asynccontextmanager
async def raw_session(url: str) -> AsyncIterator[Post]:
    """An initialized MCP session that posts JSON-RPC text as written (the SDK client cannot send 1e999)."""
    async with httpx.AsyncClient(timeout=WAIT) as http:
        init = await post_text(http, url, initialize_text())
        assert init.status_code == 200, init.text
        session = {
            "mcp-session-id": init.headers["mcp-session-id"],
            "mcp-protocol-version": types.LATEST_PROTOCOL_VERSION,
        }
        notice = await post_text(http, url, '{"jsonrpc": "2.0", "method": "notifications/initialized"}', session)
        assert notice.status_code == 202

        async def post(body: str) -> tuple[int, dict[str, Any]]:
            response = await post_text(http, url, body, session)
            return response.status_code, json_rpc_reply(response)

        yield post


async def test_http_server_on_loopback_answers_tools_list_and_records_the_mcp_session(app: AppContext) -> None:
    async with serving(app) as url:
        async with (
            streamable_http_client(url) as (read, write, session_id),
            ClientSession(read, write, client_info=CLIENT) as session,
        ):
            await session.initialize()
            listed = (await session.list_tools()).tools
            result = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007"})
            mcp_session = session_id()
        async with httpx.AsyncClient() as plain:
            rebinding = await plain.post(url, headers={"Host": "evil.example"}, json={})

    assert {"assets-get_pump_details", "docs-search_documentation"} <= {tool.name for tool in listed}
    assert result.structuredContent is not None and result.structuredContent["pump_id"] == "PUMP-007"
    row = (await app.audit.tail(1))[0]
    assert (row.principal, row.door, row.session) == (
        LOCAL,
        "mcp",
        mcp_session,
    )  # unauthenticated loopback: the OS user, unproven
    assert mcp_session
    assert rebinding.status_code == 421  # a foreign Host header is refused (DNS-rebinding protection)


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
async def test_a_number_past_the_float_range_is_refused_naming_the_argument_not_read_as_the_default(
    app: AppContext, number: str
) -> None:
    arguments = f'{{"pump_id": "PUMP-004", "sensor_type": "vibration", "days": {number}}}'
    async with serving(app) as url, raw_session(url) as post:
        status, reply = await post(call_text(2, "sensors-get_sensor_trend", arguments))

    assert status == 200 and reply["id"] == 2
    assert reply["result"]["isError"] is True, reply  # not a 30-day trend, as if days had been left out
    assert "days must be a finite number" in reply["result"]["content"][0]["text"]
    row = (await app.audit.tail(1))[0]
    assert (row.function, row.outcome.value, row.principal, row.door) == (
        "sensors-get_sensor_trend",
        "rejected",
        LOCAL,
        "mcp",
    )
    assert row.arguments == {"days": str(float(number)), "pump_id": "PUMP-004", "sensor_type": "vibration"}


async def test_a_request_nested_50000_levels_deep_gets_a_clear_error_and_the_server_keeps_serving(
    app: AppContext,
) -> None:
    async with serving(app) as url, raw_session(url) as post:
        call_status, deep_call = await post(call_text(2, "assets-get_pump_details", f'{{"pump_id": {DEEP}}}'))
        list_status, deep_list = await post(
            f'{{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {{"_meta": {{"x": {DEEP}}}}}}}'
        )
        broken_status, broken = await post("[" * 50_000)
        _, after = await post(call_text(4, "assets-get_pump_details", '{"pump_id": "PUMP-007"}'))

    assert call_status == 200 and deep_call["id"] == 2 and deep_call["result"]["isError"] is True
    assert "pump_id nests arrays and objects more than" in deep_call["result"]["content"][0]["text"]
    assert list_status == 200 and deep_list["id"] == 3
    assert deep_list["error"]["code"] == types.INVALID_REQUEST and "levels deep" in deep_list["error"]["message"]
    assert broken_status == 400 and broken["error"]["code"] == types.PARSE_ERROR
    assert after["id"] == 4 and after["result"]["isError"] is False
    rows = [r for r in await app.audit.tail(2) if r.door == "mcp"]
    assert [(r.function, r.outcome.value) for r in rows] == [
        ("assets-get_pump_details", "rejected"),
        ("assets-get_pump_details", "ok"),
    ]


async def test_a_server_for_any_address_keeps_host_and_origin_checks_and_accepts_the_allowed_names(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings_path = tmp_path / "remote.json"
    mcp = {"AllowedHosts": ["pumps.example.com"], "AllowedOrigins": ["https://ops.example.com"]}
    database = database_section(database_target, "r.db")
    settings_path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, "Mcp": mcp}))
    _, secret = TokenFile(tmp_path / "data" / "mcp-tokens.json").create("remote-client", [Role.OPERATOR])
    async with open_app(load_settings(settings_path, env={})) as app, serving(app, told="0.0.0.0") as url:
        port = url.split(":")[2].split("/")[0]
        async with httpx.AsyncClient(timeout=WAIT) as http:

            async def status(**headers: str) -> int:
                bearer = {"Authorization": f"Bearer {secret}"}
                return (await post_text(http, url, initialize_text(), {**bearer, **headers})).status_code

            foreign_host = await status(Host="evil.example")
            foreign_origin = await status(Origin="https://evil.example")
            proxy_name = await status(Host="pumps.example.com")
            proxy_name_and_port = await status(Host="pumps.example.com:8443")
            allowed_origin = await status(Host="pumps.example.com", Origin="https://ops.example.com")
            bound_address = await status(Host=f"0.0.0.0:{port}")

    assert (foreign_host, foreign_origin) == (421, 403)  # DNS-rebinding protection stays on off loopback
    assert (proxy_name, proxy_name_and_port, allowed_origin, bound_address) == (200, 200, 200, 200)


async def test_a_server_on_another_loopback_address_answers_clients_that_name_it(app: AppContext) -> None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address on this machine")
    finally:
        probe.close()
    async with (
        serving(app, "127.0.0.2") as url,
        streamable_http_client(url) as (read, write, _),
        ClientSession(read, write, client_info=CLIENT) as session,
    ):
        await session.initialize()
        result = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007"})
    assert result.structuredContent is not None and result.structuredContent["pump_id"] == "PUMP-007"


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


def test_a_port_in_use_exits_2_with_one_line_saying_how_to_choose_another(settings_file: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli_app(), ["--settings", str(settings_file), "mcp", "--http", "--port", str(port)])
    lines = [line for line in result.output.splitlines() if line.strip()]  # stdout and stderr, interleaved
    assert result.exit_code == 2, result.output
    assert len(lines) == 1, lines
    assert f"Port {port} is already in use" in lines[0] and "--port" in lines[0] and "Mcp.Port" in lines[0]
    assert "streamable HTTP" not in result.output  # it never claimed to serve


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
    assert (row.principal, row.door) == (f"{os_user()} (asserted: {principal})", "mcp")
