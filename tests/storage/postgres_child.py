"""PumpOps processes for the PostgreSQL cross-process tests: each its own interpreter and its own `Database.open`.

Run as ``python -m tests.storage.postgres_child SCENARIO ...`` from the repository root. It prints one JSON line
per event the parent needs (`tests.durability.child.emit`). The concurrent scenarios report ``ready`` once
PumpOps is imported and the database open, then wait for the BARRIER file (written by the parent when every child
is ready) and sleep until the start time it holds, so all of them begin their writes at the same moment. The
holding scenarios print ``paused`` inside an uncommitted write transaction and wait (bounded) to be killed
(`tests.durability.child.pause`).

Scenarios:
  approve SETTINGS APPROVAL_ID NAME BARRIER  open the app; at the start time approve as supervisor NAME
  audit URL NAME COUNT BARRIER               open the database; at the start time append COUNT audit rows
  hold-audit URL                             append audit rows and idempotency rows in one transaction; pause
  hold-approval SETTINGS APPROVAL_ID         approve as "supervisor"; pause in the write's transaction, after the
                                             work order, the executed state, the idempotency record and the audit
                                             row were written (`governance.complete`), before the commit
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from storage import open_database
from tests.durability.child import emit, pause, run_approval

BARRIER_LIMIT_S = 120  # the parent opens the barrier far sooner; this only stops an orphan from living forever
HELD_AUDIT_ROWS = 2
HELD_INTENTS = [f"held-{i}" for i in range(3)]


def barrier(path: Path) -> None:
    """Wait for the parent's barrier file, then sleep until the start time written in it.

    Blocking on purpose: the child does nothing else meanwhile, and a busy event loop would only blur the start.
    """
    deadline = time.monotonic() + BARRIER_LIMIT_S
    while not path.exists():
        if time.monotonic() > deadline:
            emit("no_barrier")
            os._exit(4)
        time.sleep(0.005)
    start = float(path.read_text())
    time.sleep(max(0.0, start - time.time()))
    emit("started", late_ms=round((time.time() - start) * 1000, 1))


async def approve_at_once(settings_path: str, approval_id: str, name: str, barrier_path: str) -> None:
    from core.errors import PumpOpsError
    from kernel_setup import load_settings, open_app
    from tests.callers import supervisor

    async with open_app(load_settings(Path(settings_path), env={})) as app:
        service = app.approvals
        emit("ready")
        barrier(Path(barrier_path))
        try:
            decision = await service.approve(approval_id, supervisor(name))
        except PumpOpsError as exc:  # a refusal the supervisor is shown (expired, rejected, ...)
            emit("refused", error=type(exc).__name__, message=str(exc))
            return
        emit(
            "decided",
            outcome=decision.outcome.value,
            status=decision.status.value,
            decided_by=decision.decided_by,
            result=decision.result,
            message=decision.message,
        )


async def append_at_once(url: str, name: str, count: int, barrier_path: str) -> None:
    from governance.audit_log import AuditLog, AuditOutcome
    from governance.identity import CallContext

    db = await open_database(url)
    try:
        audit = AuditLog(db)
        caller = CallContext(principal=name, session=f"s-{name}", door="test")
        emit("ready")
        barrier(Path(barrier_path))
        for n in range(count):
            await audit.record(
                function="test-append",
                arguments={"writer": name, "n": n},
                outcome=AuditOutcome.OK,
                call=caller,
                duration_ms=n + 0.125,  # a float column, hashed as stored
                result_text=f"{name}-{n}",
            )
        emit("appended", count=count)
    finally:
        await db.close()


async def hold_audit(url: str) -> None:
    from governance.audit_log import AuditLog, AuditOutcome
    from governance.identity import CallContext

    db = await open_database(url)
    audit = AuditLog(db)
    caller = CallContext(principal="holder", door="test")
    async with db.transaction() as conn:
        ids = []
        for n in range(HELD_AUDIT_ROWS):
            row = await audit.record_in(
                conn, function="test-held", arguments={"n": n}, outcome=AuditOutcome.OK, call=caller
            )
            ids.append(row.id)
        await conn.executemany(
            "INSERT INTO idempotency (intent_key, function, result, created_at) VALUES (?, ?, ?, ?)",
            [(intent, "test-held", "{}", "2025-01-01T00:00:00+00:00") for intent in HELD_INTENTS],
        )
        emit("in_transaction", audit_ids=ids, intents=HELD_INTENTS)
        await pause()


async def hold_approval(settings_path: str, approval_id: str) -> None:
    import twin.work_orders

    complete = twin.work_orders.complete

    async def complete_then_pause(conn: Any, grant: Any, result: str) -> None:
        await complete(conn, grant, result)
        emit("in_transaction", result=result)
        await pause()

    twin.work_orders.complete = complete_then_pause
    # `run_approval` approves as "supervisor"; CRASH_TEST_PAUSE names no pause point of its own here.
    await run_approval(settings_path, approval_id)


def main(argv: list[str]) -> None:
    scenario, *rest = argv
    if scenario == "approve":
        asyncio.run(approve_at_once(rest[0], rest[1], rest[2], rest[3]))
    elif scenario == "audit":
        asyncio.run(append_at_once(rest[0], rest[1], int(rest[2]), rest[3]))
    elif scenario == "hold-audit":
        asyncio.run(hold_audit(rest[0]))
    elif scenario == "hold-approval":
        asyncio.run(hold_approval(rest[0], rest[1]))
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
