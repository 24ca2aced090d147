"""20 concurrent sessions for a minute: MCP over streamable HTTP (another process) and in-process turns.

No `database is locked` reaches a user, audit rows equal invocations, the chain verifies, two
supervisors approving one action at once execute it once. Prints the figures (run with -s).
`LOAD_SECONDS` shortens or lengthens the run (default 60), on each backend: the test runs on an SQLite file and
on a fresh PostgreSQL database (`database_target`). `run_sessions` is the load itself, on whichever database the
settings name; bench/postgres_bench.py runs it on SQLite and on PostgreSQL side by side and reports the figures.
"""

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from kernel_setup import Settings, load_settings, open_app
from tests.callers import supervisor
from tests.fakes.ollama import MODEL, reply
from turn.factory import runner_for
from turn.runner import TurnRunner

SECONDS = float(os.environ.get("LOAD_SECONDS", "60"))
MCP_SESSIONS = 10
TURN_SESSIONS = 10
PUMPS = [f"PUMP-00{i}" for i in range(1, 9)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def reactive_ollama(request: httpx.Request) -> httpx.Response:
    """An instant model: asks for one pump's details after a user message, answers after a tool result."""
    if request.url.path == "/api/tags":
        return httpx.Response(200, json={"models": [{"model": MODEL, "name": MODEL}]})
    body = json.loads(request.content)
    last = body["messages"][-1]
    if last["role"] == "user":
        pump = PUMPS[len(last["content"]) % len(PUMPS)]
        chunk = reply(tool_calls=[("assets-get_pump_details", {"pump_id": pump})])
    else:
        chunk = reply("Checked.")
    return httpx.Response(
        200, content=(json.dumps(chunk) + "\n").encode(), headers={"content-type": "application/x-ndjson"}
    )


def think_time(think: float, index: int, step: int) -> float:
    """A session's pause before its next call: ``think`` on average, spread 0.5-1.5x so sessions never march in step."""
    return think * (0.5 + ((index * 7 + step) % 11) / 10)


async def mcp_worker(
    url: str,
    index: int,
    deadline: float,
    latencies: list[float],
    errors: list[str],
    writes: list[float],
    think: float = 0.0,
) -> int:
    calls = 0
    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        while time.monotonic() < deadline:
            pump = PUMPS[(index + calls) % len(PUMPS)]
            if calls % 10 == 9:
                name, args = (
                    "work_orders-create_work_order",
                    {"pump_id": pump, "priority": "low", "summary": f"Load test {index}-{calls}"},
                )
            elif calls % 3 == 0:
                name, args = "alarms-list_alarms", {"pump_id": pump}
            else:
                name, args = "assets-get_pump_details", {"pump_id": pump}
            started = time.perf_counter()
            result = await session.call_tool(name, args)
            latencies.append((time.perf_counter() - started) * 1000)
            if calls % 10 == 9:
                writes.append(latencies[-1])
            calls += 1
            text = "".join(getattr(c, "text", "") for c in result.content)
            if result.isError or "locked" in text:
                errors.append(text[:200])
            if think:
                await asyncio.sleep(think_time(think, index, calls))
    return calls


async def turn_worker(
    runner: TurnRunner, index: int, deadline: float, latencies: list[float], errors: list[str], think: float = 0.0
) -> int:
    invocations = 0
    session = f"load-{index}"
    while time.monotonic() < deadline:
        result = await runner.run("x" * (index + invocations % 7 + 1), session=session, principal=f"op{index}")
        for record in result.tool_calls:
            invocations += 1
            latencies.append(record.duration_ms)
            if record.status != "ok":
                errors.append(record.summary)
        if result.degraded:
            errors.append(result.reason or "degraded")
        if think:
            await asyncio.sleep(think_time(think, index, invocations))
    return invocations


def load_test_settings(folder: Path, database_url: str | None = None) -> Settings:
    """The load's settings in ``folder``: an SQLite file there, or the PostgreSQL database at ``database_url``."""
    path = folder / "appsettings.json"
    database = {"Path": "load.db"} if database_url is None else {"Url": database_url}
    path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, "Agent": {"HistoryTokens": 600}}))
    return load_settings(path, env={})


@dataclass
class LoadRun:
    """What one load run did and measured."""

    seconds: float
    invocations: int
    audit_rows: int
    chain: int | None  # None when the audit chain verifies, else the first broken row
    work_orders: int
    latencies: list[float] = field(default_factory=list)  # every tool call, ms
    writes: list[float] = field(default_factory=list)  # the MCP create_work_order calls among them, ms
    errors: list[str] = field(default_factory=list)

    @property
    def sessions(self) -> int:
        return MCP_SESSIONS + TURN_SESSIONS

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies)

    @property
    def p95(self) -> float:
        return p95(self.latencies)

    def line(self) -> str:
        chain = "verifies" if self.chain is None else f"broken at {self.chain}"
        return (
            f"concurrent sessions: {self.sessions} x {self.seconds:.0f} s; invocations: {self.invocations}; "
            f"audit rows: {self.audit_rows}; chain: {chain}; "
            f"p50 tool latency {self.p50:.1f} ms, p95 {self.p95:.1f} ms; errors: {len(self.errors)}"
        )


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 20 else max(values)


async def run_sessions(settings: Settings, seconds: float = SECONDS, think: float = 0.0) -> LoadRun:
    """The load: an MCP server process with 10 sessions and two in-process apps with 10 turn sessions, then two
    supervisors approving one parked write at once; on the database ``settings`` names (created if missing).

    ``think`` is each session's mean pause between calls (turns), as an operator reads; 0 calls back to back.
    """
    async with open_app(settings):  # create and load the database before the server starts
        pass
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    server = subprocess.Popen(  # noqa: ASYNC220 - returns at once; the server runs beside the test
        [
            str(Path(sys.executable).parent / "pumpops"),
            "--settings",
            str(settings.source),
            "mcp",
            "--http",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        ready_by = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else "server exited"
                assert time.monotonic() < ready_by, "the MCP server did not start within 60 s"
                await asyncio.sleep(0.2)
        latencies: list[float] = []
        writes: list[float] = []
        errors: list[str] = []
        started = time.monotonic()
        deadline = started + seconds
        async with (
            open_app(settings, chat_transport=httpx.MockTransport(reactive_ollama)) as first,
            open_app(settings, chat_transport=httpx.MockTransport(reactive_ollama)) as second,
        ):
            runners = [runner_for(first), runner_for(second)]
            counts: list[Any] = await asyncio.gather(
                *[
                    mcp_worker(f"http://127.0.0.1:{port}/mcp", i, deadline, latencies, errors, writes, think)
                    for i in range(MCP_SESSIONS)
                ],
                *[turn_worker(runners[i % 2], i, deadline, latencies, errors, think) for i in range(TURN_SESSIONS)],
                return_exceptions=True,
            )
            elapsed = time.monotonic() - started
            failures = [c for c in counts if isinstance(c, BaseException)]
            assert not failures, failures
            invocations = sum(counts)
            pending = await first.approvals.list("pending")
            assert pending.total, "the load included writes, which must be parked"
            target = pending.approvals[0].id
            decided = await asyncio.gather(
                first.approvals.approve(target, supervisor("sup-a")),
                second.approvals.approve(target, supervisor("sup-b")),
                return_exceptions=True,
            )
            assert not [d for d in decided if isinstance(d, BaseException)], decided
            orders = await first.db.fetch_one("SELECT COUNT(*) AS n FROM work_orders")
            rows = await first.db.fetch_one("SELECT COUNT(*) AS n FROM audit_log WHERE door IN ('mcp', 'chat')")
            chain = await first.audit.verify()
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stderr is not None:
            server.stderr.close()
    return LoadRun(
        seconds=elapsed,
        invocations=invocations,
        audit_rows=rows["n"] if rows else 0,
        chain=chain,
        work_orders=orders["n"] if orders else 0,
        latencies=latencies,
        writes=writes,
        errors=errors,
    )


@pytest.fixture
def settings(tmp_path: Path, database_target: str | Path) -> Settings:
    """The load on either backend: the SQLite file in ``tmp_path``, or the test's fresh PostgreSQL database."""
    return load_test_settings(tmp_path, database_target if isinstance(database_target, str) else None)


async def test_twenty_concurrent_sessions_lose_nothing_and_never_see_a_lock(settings: Settings) -> None:
    run = await run_sessions(settings)
    print("\n" + run.line())
    assert run.errors == []
    assert run.audit_rows == run.invocations
    assert run.chain is None
    assert run.work_orders == 1
