"""The control room on one PostgreSQL: chat, the MCP HTTP server, the telemetry service and approvals at once.

Each door runs as its own process against one database (the chat in this test's process, the others as
`pumpops` processes), all at the same time: the telemetry service raises an alarm from a simulated OPC UA plant,
the MCP server reports it, an operator's chat parks a work order, the approvals CLI executes it, and the MCP
server sees the order; afterwards the audit chain, written by every door, verifies.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from rich.console import Console

from doors.cli.chat_cmd import StreamReader, run_chat
from doors.cli.common import CliState
from governance.roles import Role
from kernel_setup import load_settings
from kernel_setup.local_identity import os_user
from tests.callers import person
from tests.cli_process import CLI_CODE, REPO, run_pumpops
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.postgres_server import PostgresServer, fresh_database, query
from tests.telemetry.plant_servers import free_port

WAIT_S = 60.0


@pytest.fixture
async def database_url(postgres_server: PostgresServer) -> AsyncIterator[str]:
    async with fresh_database(postgres_server) as url:
        yield url


def write_settings(folder: Path, url: str) -> Path:
    path = folder / "appsettings.json"
    path.write_text(
        json.dumps(
            {
                "Database": {"Url": url},
                "Qdrant": {"Path": ":memory:"},
                "Identity": {"Roles": {os_user(): ["supervisor"]}},
                "Telemetry": {"FlushSeconds": 0.2, "ReconnectMinSeconds": 0.1, "ReconnectMaxSeconds": 0.5},
                "Alarms": {"RaiseAfterSeconds": 1, "ClearAfterSeconds": 1},
            }
        )
    )
    return path


def start(settings: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``pumpops <args>`` of this checkout as a process beside the test."""
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), clean.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-c", CLI_CODE, "--settings", str(settings), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**clean, "COLUMNS": "200", **(env or {})},
        cwd=settings.parent,
    )


def first_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(process.stdout.readline).result(timeout=WAIT_S)


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
    return int(process.returncode), err


def wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.2)


def mcp_call(port: int, name: str, arguments: dict[str, Any]) -> str:
    """One tool call over streamable HTTP to the MCP server process; the result's text."""

    async def run() -> str:
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(name, arguments)
        text = "".join(getattr(part, "text", "") for part in result.content)
        assert not result.isError, text
        return text

    return asyncio.run(run())


def telemetry_alarm(settings: Path) -> str | None:
    rows = query(settings, "SELECT alarm_id FROM alarms WHERE pump_id = 'PUMP-002' AND origin = 'telemetry'")
    return str(rows[0]["alarm_id"]) if rows else None


def chat_parks_a_work_order(settings: Path) -> str:
    """alice, an operator, asks the chat (this process) for a work order; the id of the approval it parked."""
    buffer = StringIO()
    console = Console(file=buffer, width=120, color_system=None)
    cli = CliState(settings_path=str(settings), console=console, err_console=console)
    cli._settings = load_settings(settings, env={})
    fake = ScriptedOllama(
        [
            reply(
                tool_calls=[
                    call(
                        "work_orders-create_work_order",
                        pump_id="PUMP-002",
                        priority="high",
                        summary="Vibration rising; inspect the bearings",
                    )
                ]
            ),
            reply("The work order is parked for approval."),
        ]
    )
    reader = StreamReader(StringIO("Open a work order for PUMP-002\n/quit\n"), console)
    alice = person("alice", Role.OPERATOR, door="chat")
    assert run_chat(cli, reader, principal=alice, transport=fake.transport()) == 0, buffer.getvalue()
    output = buffer.getvalue()
    assert "database PostgreSQL" in output, output
    found = re.search(r"→ pending approval (\S+)", output)
    assert found, output
    return found.group(1)


@pytest.fixture
def running(tmp_path: Path, database_url: str) -> Iterator[dict[str, Any]]:
    """The simulator, the telemetry service and the MCP server, all started on the scene's database."""
    settings = write_settings(tmp_path, database_url)
    initialised = run_pumpops(settings, "db", "init")
    assert initialised.returncode == 0, initialised.stderr
    endpoint = f"opc.tcp://127.0.0.1:{free_port()}/pumpops/"
    processes: dict[str, subprocess.Popen[str]] = {}
    try:
        processes["simulator"] = start(
            settings, "simulate", "opcua", "--endpoint", endpoint, "--rate", "4", "--drift", "PUMP-002",
            "--drift-seconds", "2",
        )  # fmt: skip
        line = first_line(processes["simulator"])
        match = re.fullmatch(r"PUMPOPS_Telemetry__OpcUa='(.+)' pumpops telemetry\n", line)
        assert match, line
        processes["telemetry"] = start(settings, "telemetry", "--no-triage", env={"PUMPOPS_Telemetry__OpcUa": match[1]})
        port = free_port()
        processes["mcp"] = start(settings, "mcp", "--http", "--port", str(port))
        wait_for_port(port, processes["mcp"])
        yield {"settings": settings, "port": port, "processes": processes}
    finally:
        for process in processes.values():
            stop(process)


def test_chat_mcp_telemetry_and_approvals_share_one_postgres_at_once(running: dict[str, Any]) -> None:
    settings: Path = running["settings"]
    port: int = running["port"]
    processes: dict[str, subprocess.Popen[str]] = running["processes"]

    deadline = time.monotonic() + WAIT_S
    while (alarm := telemetry_alarm(settings)) is None:
        assert processes["telemetry"].poll() is None, processes["telemetry"].communicate()[1]
        assert time.monotonic() < deadline, "the telemetry service raised no alarm"
        time.sleep(0.2)
    assert alarm in mcp_call(port, "alarms-list_alarms", {"pump_id": "PUMP-002"})

    approval = chat_parks_a_work_order(settings)
    listed = json.loads(run_pumpops(settings, "approvals", "list", "--status", "pending", "--json").stdout)
    assert [item["id"] for item in listed["approvals"]] == [approval]
    decided = run_pumpops(settings, "approvals", "approve", approval, "--json")
    assert decided.returncode == 0, decided.stderr
    order = json.loads(decided.stdout)[0]["result"]["work_order_id"]
    assert order in mcp_call(port, "work_orders-list_work_orders", {"pump_id": "PUMP-002"})

    code, err = stop(processes["telemetry"])
    assert code == 0, err
    stored = re.search(r"stopped: (\d+) readings stored", err)
    assert stored and int(stored[1]) > 0, err
    assert all(process.poll() is None for name, process in processes.items() if name != "telemetry")

    verified = run_pumpops(settings, "audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    doors = {row["door"] for row in query(settings, "SELECT DISTINCT door FROM audit_log")}
    assert {"chat", "mcp", "approvals"} <= doors, doors
    executed = query(
        settings,
        "SELECT principal FROM audit_log WHERE function = 'work_orders-create_work_order' AND detail = ?",
        (approval,),
    )
    assert executed, "the approved work order's execution is in the audit trail"
