"""A PumpOps process for the crash tests to kill: runs a turn, an approval or an ingestion, and can pause.

Run as ``python -m tests.durability.child SCENARIO ...`` from the repository root. It prints one JSON line
per event the parent needs (flushed at once). ``CRASH_TEST_PAUSE`` names a point where it prints
``{"event": "paused"}`` and waits (bounded) to be killed; the pause is made by wrapping a service method
here, in test code, never by a hook in the product.

Scenarios:
  turn SETTINGS QUESTION        one agent turn against the Ollama host in SETTINGS (pauses: tool, audit)
  approve SETTINGS APPROVAL_ID  approve as "supervisor" (pauses: before_write, in_write, after_commit)
  ingest DB QDRANT_DIR PATH...  ingest into a local Qdrant folder, the manifest in DB (an SQLite file or a
                                postgresql:// URL) (pauses: after_first_batch, in_manifest)
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from storage import open_database

PAUSE = os.environ.get("CRASH_TEST_PAUSE", "")
PAUSE_LIMIT_S = 120  # the parent kills far sooner; this only stops an orphan from living forever


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


async def pause() -> None:
    emit("paused", point=PAUSE)
    try:
        await asyncio.wait_for(asyncio.Event().wait(), PAUSE_LIMIT_S)
    except TimeoutError:
        emit("not_killed")
        os._exit(3)


def pause_in(owner: Any, name: str, *, after: bool = False, when: Callable[..., bool] = lambda *a, **k: True) -> None:
    """Wrap ``owner.name`` so that it pauses before (or after) running, when ``when(*args)`` holds."""
    original: Callable[..., Awaitable[Any]] = getattr(owner, name)

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not when(*args, **kwargs):
            return await original(*args, **kwargs)
        if not after:
            await pause()
        result = await original(*args, **kwargs)
        if after:
            emit("committed", result=result if isinstance(result, str | int | None) else None)
            await pause()
        return result

    setattr(owner, name, wrapper)


async def run_turn(settings_path: str, question: str) -> None:
    from governance.audit_log import AuditLog
    from kernel_setup import load_settings, open_app
    from turn.events import ToolCallFinished, TurnFinished
    from turn.factory import runner_for
    from twin import AssetService

    if PAUSE == "tool":
        pause_in(AssetService, "pump_details")
    elif PAUSE == "audit":  # inside the audit row's write transaction, the row inserted, not committed
        pause_in(
            AuditLog, "append", after=True, when=lambda self, conn, columns: columns["function"].startswith("assets")
        )
    async with open_app(load_settings(Path(settings_path), env={})) as app:
        async for event in runner_for(app).stream(question, principal="operator", door="test"):
            if isinstance(event, ToolCallFinished):
                emit("tool", name=event.record.name, status=event.record.status, summary=event.record.summary)
            elif isinstance(event, TurnFinished):
                emit("finished", session=event.result.session)


async def run_approval(settings_path: str, approval_id: str) -> None:
    import twin.work_orders
    from kernel_setup import load_settings, open_app
    from tests.callers import supervisor

    service = twin.work_orders.WorkOrderService
    if PAUSE == "before_write":
        pause_in(service, "create")
    elif PAUSE == "in_write":  # the work order inserted, its transaction not yet committed
        pause_in(twin.work_orders, "complete")
    elif PAUSE == "after_commit":
        pause_in(service, "create", after=True)
    async with open_app(load_settings(Path(settings_path), env={})) as app:
        approval = await app.approvals.approve(approval_id, supervisor("supervisor"))
        emit("approved", status=approval.status.value, result=approval.result)


async def run_ingest(database: str, qdrant_dir: str, paths: list[str]) -> None:
    from memory import DocumentIndex, IndexConfig, IngestManifest, ingest
    from tests.security.fakes import HashEmbedder

    calls = {"upsert": 0, "replace": 0}

    def nth(kind: str, n: int) -> Callable[..., bool]:
        def check(*args: Any, **kwargs: Any) -> bool:
            calls[kind] += 1
            return calls[kind] == n

        return check

    if PAUSE == "after_first_batch":
        pause_in(DocumentIndex, "upsert", after=True, when=nth("upsert", 1))
    elif PAUSE == "in_manifest":  # the first document recorded; the second's chunks stored, not recorded
        pause_in(IngestManifest, "replace", when=nth("replace", 2))
    db = await open_database(database)
    try:
        async with DocumentIndex(IndexConfig(path=qdrant_dir), HashEmbedder()) as index:
            report = await ingest([Path(p) for p in paths], index, IngestManifest(db, "manuals"))
            emit("ingested", documents=report.documents, chunks_added=report.chunks_added)
    finally:
        await db.close()


def main(argv: list[str]) -> None:
    scenario, *rest = argv
    if scenario == "turn":
        asyncio.run(run_turn(rest[0], rest[1]))
    elif scenario == "approve":
        asyncio.run(run_approval(rest[0], rest[1]))
    elif scenario == "ingest":
        asyncio.run(run_ingest(rest[0], rest[1], rest[2:]))
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
