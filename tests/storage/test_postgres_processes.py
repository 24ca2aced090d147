"""PostgreSQL across OS processes: each child its own interpreter and its own `open_database(url)`.

Four supervisors' processes approving one parked action at the same moment run it exactly once; four processes
appending to the audit trail at once leave one gapless, unforked chain; a process SIGKILLed inside a write
transaction leaves none of that transaction behind, and the write lock (a transaction-scoped advisory lock) is
free again for the next writer. The children are `tests.storage.postgres_child`; the concurrent ones start
their writes together at a start time the parent writes into a barrier file once every child is ready.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from governance.audit_log import AuditLog, AuditOutcome
from governance.identity import CallContext
from kernel_setup import Settings, load_settings, open_app
from storage import Database, open_database
from tests.durability.support import REPO, work_orders_of
from tests.durability.test_crash import reapprove_once
from tests.governance.test_approvals import propose
from tests.postgres_server import PostgresServer, fresh_database

CHILD = "tests.storage.postgres_child"
PROCESSES = 4
ROWS_EACH = 50
START_S = 60.0  # bound for a child to import PumpOps and open the database (four at once on 2 cores: ~10 s)
RUN_S = 60.0  # bound for a child's writes once started, and for its exit
STOP_S = 10.0  # bound for a killed child to be reaped and its output drained
LOCK_FREE_S = 15.0  # bound for the server to end a killed client's session and free its advisory lock
BARRIER_LEAD_S = 0.3  # the start time written into the barrier: this long after every child is ready

Event = dict[str, Any]

WRITE_ROWS = (
    "SELECT principal, detail, result_digest FROM audit_log "
    "WHERE function = 'work_orders-create_work_order' AND outcome = 'ok' ORDER BY id"
)
"""The ``ok`` audit rows of the write: the execution's (detail ``<approval> approved by <who>``, appended in the
write's transaction) and one per replayed invocation (no detail, the same result digest: an approver whose
invocation found the action already run)."""
ADVISORY_LOCKS = (
    "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)
"""How many sessions of this database hold an advisory lock (the write lock, `storage.postgres.WRITE_LOCK_KEY`)."""


class ChildProcess:
    """One running `tests.storage.postgres_child`, its JSON events read from its stdout with bounded waits."""

    def __init__(self, name: str, process: asyncio.subprocess.Process, log: Path) -> None:
        self.name = name
        self.process = process
        self.log = log
        self.events: list[Event] = []

    async def wait_for(self, *kinds: str, within: float) -> Event:
        """The first event of one of ``kinds``; fails, with its stderr, after ``within`` s or if it exits first."""
        seen = next((e for e in self.events if e.get("event") in kinds), None)
        deadline = time.monotonic() + within
        assert self.process.stdout is not None
        while seen is None:
            remaining = deadline - time.monotonic()
            try:
                line = await asyncio.wait_for(self.process.stdout.readline(), max(remaining, 0.0))
            except TimeoutError:
                raise AssertionError(f"{self.name} sent no {kinds} within {within:.0f} s; {self.tail()}") from None
            if not line:
                raise AssertionError(f"{self.name} exited before sending {kinds}; {self.tail()}")
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not one of its events
            self.events.append(event)
            if event.get("event") in kinds:
                seen = event
        return seen

    async def exited(self, within: float = RUN_S) -> int:
        """The child's exit status, once it exits by itself within ``within`` s."""
        try:
            return await asyncio.wait_for(self.process.wait(), within)
        except TimeoutError:
            raise AssertionError(f"{self.name} did not exit within {within:.0f} s; {self.tail()}") from None

    async def kill(self) -> None:
        """SIGKILL: no rollback, no close, no atexit; the server sees the client's socket close."""
        self.process.send_signal(signal.SIGKILL)
        returncode = await asyncio.wait_for(self.process.wait(), STOP_S)
        assert returncode == -signal.SIGKILL, self.tail()

    async def close(self) -> None:
        """Kill the child if it still runs, reap it and drain its stdout (so its pipe transport closes)."""
        if self.process.returncode is None:
            self.process.kill()
        await asyncio.wait_for(self.process.wait(), STOP_S)
        if self.process.stdout is not None:
            await asyncio.wait_for(self.process.stdout.read(), STOP_S)

    def tail(self) -> str:
        return f"events {self.events}; stderr: " + self.log.read_text(errors="replace")[-2000:]


@asynccontextmanager
async def children(folder: Path, commands: Sequence[tuple[str, list[str]]]) -> AsyncIterator[list[ChildProcess]]:
    """Start one child per ``(name, arguments)``; every one of them is killed (if still running) on the way out."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(("PUMPOPS_", "CRASH_TEST_"))}
    started: list[ChildProcess] = []
    try:
        for name, arguments in commands:
            log = folder / f"{name}.stderr"
            with log.open("w") as stderr:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    CHILD,
                    *arguments,
                    cwd=REPO,
                    env=env,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=stderr,
                )
            started.append(ChildProcess(name, process, log))
        yield started
    finally:
        for child in started:
            await child.close()


async def start_together(processes: Sequence[ChildProcess], barrier: Path) -> None:
    """Wait until every child is ready, then write the shared start time into the barrier they poll for."""
    for child in processes:
        await child.wait_for("ready", within=START_S)
    written = barrier.with_suffix(".tmp")
    written.write_text(repr(time.time() + BARRIER_LEAD_S))
    written.replace(barrier)  # atomically: no child reads a half-written time


def settings_for(folder: Path, url: str) -> Settings:
    path = folder / "appsettings.json"
    path.write_text(json.dumps({"Database": {"Url": url}, "Qdrant": {"Path": ":memory:"}}))
    return load_settings(path, env={})


async def count(db: Database, sql: str, params: Sequence[Any] = ()) -> int:
    row = await db.fetch_one(sql, params)
    assert row is not None
    return int(row["n"])


async def chain_intact(db: Database) -> int:
    """Assert the audit chain verifies and its ids run 1..N without a gap; return N."""
    ids = [int(r["id"]) for r in await db.fetch_all("SELECT id FROM audit_log ORDER BY id")]
    assert ids == list(range(1, len(ids) + 1)), "the audit ids have a gap"
    report = await AuditLog(db).check_chain()
    assert report.ok, report
    assert report.rows_checked == len(ids)
    return len(ids)


async def write_lock_freed(db: Database, within: float = LOCK_FREE_S) -> None:
    """Wait (bounded) until no session of this database holds an advisory lock."""
    deadline = time.monotonic() + within
    while await count(db, ADVISORY_LOCKS):
        assert time.monotonic() < deadline, f"the write lock was still held {within:.0f} s after the kill"
        await asyncio.sleep(0.05)


# --- four supervisors' processes approve one action at the same moment ------------------------------------------


async def test_four_processes_approving_one_parked_action_at_once_execute_it_exactly_once(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    async with fresh_database(postgres_server) as url:
        settings = settings_for(tmp_path, url)
        async with open_app(settings) as app:  # the sample fleet loaded, the action parked by alice
            parked = await propose(app)
        approval_id = parked["approval_id"]
        barrier = tmp_path / "barrier"
        names = [f"sup-{i}" for i in range(PROCESSES)]
        commands = [(name, ["approve", str(settings.source), approval_id, name, str(barrier)]) for name in names]
        async with children(tmp_path, commands) as processes:
            await start_together(processes, barrier)
            answers = [await child.wait_for("decided", "refused", within=RUN_S) for child in processes]
            assert [await child.exited() for child in processes] == [0] * PROCESSES, [c.tail() for c in processes]

        ran = [a for a in answers if a.get("outcome") == "executed"]
        assert len(ran) == 1, answers
        winner = ran[0]
        assert winner["status"] == "executed" and winner["decided_by"] in names
        assert winner["result"]["status"] == "executed" and winner["result"]["approval_id"] == approval_id
        for answer in answers:
            if answer is winner:
                continue
            assert answer["event"] == "decided" and answer["outcome"] == "already_executed", answer
            assert answer["message"].startswith(f"{approval_id} had already been executed by {winner['decided_by']}")
            assert answer["result"] == winner["result"] and answer["status"] == "executed"

        async with open_app(settings) as app:
            db = app.db
            assert await work_orders_of(app, approval_id) == 1
            assert await count(db, "SELECT COUNT(*) AS n FROM work_orders") == 1
            order = await db.fetch_one("SELECT work_order_id, approved_by FROM work_orders")
            assert order is not None and order["work_order_id"] == winner["result"]["work_order_id"]
            assert order["approved_by"] == winner["decided_by"]
            assert (await app.approvals.get(approval_id)).status.value == "executed"
            assert await count(db, "SELECT COUNT(*) AS n FROM approvals WHERE status = 'executed'") == 1
            assert await count(db, "SELECT COUNT(*) AS n FROM idempotency") == 1
            execution, *replays = await db.fetch_all(WRITE_ROWS)
            assert execution["detail"] == f"{approval_id} approved by {winner['decided_by']}"
            assert execution["principal"] == winner["decided_by"]
            losers = [name for name in names if name != winner["decided_by"]]
            for replay in replays:  # the losers that invoked the write before it committed got the first result
                assert replay["detail"] is None and replay["result_digest"] == execution["result_digest"], replay
            replayed_by = [r["principal"] for r in replays]
            assert len(replayed_by) == len(set(replayed_by)) and set(replayed_by) <= set(losers)
            decisions = await db.fetch_all(
                "SELECT principal FROM audit_log WHERE function = 'approvals-approve' AND outcome = 'ok'"
            )
            assert sorted(r["principal"] for r in decisions) == names  # every process's decision audited once
            await chain_intact(db)


# --- four processes append to the audit trail at once --------------------------------------------------------


async def test_four_processes_appending_audit_rows_at_once_leave_one_gapless_unforked_chain(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    async with fresh_database(postgres_server) as url:
        db = await open_database(url)
        try:
            audit = AuditLog(db)
            for n in range(3):  # a chain already there, which the children must extend, not restart
                await audit.record(
                    function="test-before", arguments={"n": n}, outcome=AuditOutcome.OK, call=CallContext("parent")
                )
            before = await chain_intact(db)
            barrier = tmp_path / "barrier"
            names = [f"writer-{i}" for i in range(PROCESSES)]
            commands = [(name, ["audit", url, name, str(ROWS_EACH), str(barrier)]) for name in names]
            async with children(tmp_path, commands) as processes:
                await start_together(processes, barrier)
                for child in processes:
                    assert (await child.wait_for("appended", within=RUN_S))["count"] == ROWS_EACH
                assert [await child.exited() for child in processes] == [0] * PROCESSES

            assert await chain_intact(db) == before + PROCESSES * ROWS_EACH
            rows = await db.fetch_all(
                "SELECT id, principal, arguments FROM audit_log WHERE id > ? ORDER BY id", (before,)
            )
            for name in names:  # each writer's rows all there, in the order it wrote them
                mine = [json.loads(r["arguments"])["n"] for r in rows if r["principal"] == name]
                assert mine == list(range(ROWS_EACH)), name
            switches = sum(1 for a, b in itertools.pairwise(rows) if a["principal"] != b["principal"])
            print(
                f"\naudit rows appended by {PROCESSES} processes: {len(rows)}; writer switches in the chain: {switches}"
            )
        finally:
            await db.close()


# --- a process killed inside a write transaction --------------------------------------------------------------


async def test_a_process_killed_inside_a_raw_write_transaction_leaves_none_of_it(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    async with fresh_database(postgres_server) as url:
        db = await open_database(url)
        try:
            audit = AuditLog(db)
            await audit.record(
                function="test-before", arguments={}, outcome=AuditOutcome.OK, call=CallContext("parent")
            )
            async with children(tmp_path, [("holder", ["hold-audit", url])]) as (holder,):
                held = await holder.wait_for("in_transaction", within=START_S)
                await holder.wait_for("paused", within=RUN_S)
                assert held["audit_ids"] == [2, 3]  # chained onto the parent's row, not committed
                assert await count(db, ADVISORY_LOCKS) == 1  # the child holds the write lock at the kill
                await holder.kill()

            await write_lock_freed(db)
            assert await count(db, "SELECT COUNT(*) AS n FROM audit_log WHERE function = 'test-held'") == 0
            assert await count(db, "SELECT COUNT(*) AS n FROM idempotency WHERE intent_key LIKE 'held-%'") == 0
            assert await chain_intact(db) == 1
        finally:
            await db.close()
        reopened = await asyncio.wait_for(open_database(url), RUN_S)
        try:
            after = await asyncio.wait_for(
                AuditLog(reopened).record(
                    function="test-after", arguments={}, outcome=AuditOutcome.OK, call=CallContext("parent")
                ),
                RUN_S,
            )
            assert after.id == 2  # the next row takes the id the killed transaction never committed
            assert await chain_intact(reopened) == 2
        finally:
            await reopened.close()


async def test_a_process_killed_inside_an_approved_writes_transaction_leaves_none_of_it_and_it_runs_once_later(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    async with fresh_database(postgres_server) as url:
        settings = settings_for(tmp_path, url)
        async with open_app(settings) as app:
            parked = await propose(app)
        approval_id = parked["approval_id"]
        async with open_app(settings) as app:
            async with children(tmp_path, [("holder", ["hold-approval", str(settings.source), approval_id])]) as (
                holder,
            ):
                held = await holder.wait_for("in_transaction", within=START_S)
                await holder.wait_for("paused", within=RUN_S)
                assert await count(app.db, ADVISORY_LOCKS) == 1
                await holder.kill()
            await write_lock_freed(app.db)

        work_order = json.loads(held["result"])["work_order_id"]
        async with open_app(settings) as app:  # opens after the crash
            db = app.db
            # The write's transaction held the work order, the executed state, the idempotency record and the
            # execution's audit row: none of them survived. The claim (committed before the write began) did.
            assert await count(db, "SELECT COUNT(*) AS n FROM work_orders WHERE work_order_id = ?", (work_order,)) == 0
            assert await work_orders_of(app, approval_id) == 0
            assert (await app.approvals.get(approval_id)).status.value == "approved"
            assert await count(db, "SELECT COUNT(*) AS n FROM idempotency") == 0
            rows = await db.fetch_all("SELECT function, outcome, principal FROM audit_log ORDER BY id")
            assert [(r["function"], r["outcome"], r["principal"]) for r in rows] == [
                ("work_orders-create_work_order", "pending_approval", "alice"),
                ("approvals-approve", "ok", "supervisor"),
            ]
            await chain_intact(db)
            await asyncio.wait_for(reapprove_once(app, approval_id), RUN_S)  # a new write: runs it, once
            assert await count(db, "SELECT COUNT(*) AS n FROM work_orders") == 1
            assert await count(db, "SELECT COUNT(*) AS n FROM idempotency") == 1
            assert [r["detail"] for r in await db.fetch_all(WRITE_ROWS)] == [f"{approval_id} approved by supervisor"]
            await chain_intact(db)
