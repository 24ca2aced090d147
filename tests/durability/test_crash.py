"""Crash durability: SIGKILL a PumpOps process mid-turn, mid-approval and mid-ingestion, then restart.

Each kill point is reached deterministically: the child pauses there (a wrapped service method in the
child script, or a model request the fake Ollama holds) and reports it; the parent then kills it. After
the restart the audit chain verifies, no action is both executed and pending, re-approving creates exactly
one work order, the vector index opens and a re-ingest completes it, and every record the child saw
committed before the kill is still there. Each runs on both backends (`database_target`); tests/storage/
test_postgres_processes.py kills PostgreSQL clients inside raw write transactions as well.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from semantic_kernel.functions import KernelArguments

from governance.identity import CallContext, acting_as
from kernel_setup import AppContext, Settings, load_settings, open_app
from memory import DocumentIndex, IndexConfig, IngestManifest, corpus_files, ingest
from storage import open_database
from tests.callers import supervisor
from tests.durability.ollama_http import HOLD, FakeOllamaServer
from tests.durability.support import Child, Event, consistency_problems, paused, work_orders_of
from tests.fakes.ollama import call, reply
from tests.postgres_server import database_section
from tests.security.fakes import HashEmbedder

ORDER: dict[str, Any] = {"pump_id": "PUMP-007", "priority": "urgent", "summary": "Inspect DE bearing; 9.4 mm/s zone D"}


@pytest.fixture(scope="module")
def tally() -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    yield counts
    print(
        f"\nkill points tried: {counts['kill_points']}, records lost: {counts['lost']} "
        f"(of {counts['records']} seen committed before the kill)"
    )


def settings_at(tmp_path: Path, database: str | Path, **extra: Any) -> Settings:
    """Settings in ``tmp_path`` on ``database`` (the test's `database_target`: an SQLite file or PostgreSQL)."""
    path = tmp_path / "appsettings.json"
    document = {"Database": database_section(database, "crash.db"), "Qdrant": {"Path": ":memory:"}, **extra}
    path.write_text(json.dumps(document))
    return load_settings(path, env={})


def count_lost(tally: Counter[str], present: list[bool]) -> int:
    tally["records"] += len(present)
    lost = present.count(False)
    tally["lost"] += lost
    return lost


async def reapprove_once(app: AppContext, approval_id: str) -> None:
    """Approving again after the crash executes the action once; a further approval changes nothing."""
    first = await app.approvals.approve(approval_id, supervisor("supervisor"))
    assert first.status.value == "executed"
    again = await app.approvals.approve(approval_id, supervisor("carol"))
    assert again.result == first.result
    assert await work_orders_of(app, approval_id) == 1


# --- a turn ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", ["model", "tool", "audit"])
async def test_a_turn_killed_mid_flight_loses_no_committed_record(
    point: str, tmp_path: Path, database_target: str | Path, tally: Counter[str]
) -> None:
    """model: the second model request is in flight; tool: a read is running; audit: a row is half-written."""
    first = reply(
        tool_calls=[call("work_orders-create_work_order", **ORDER), call("assets-get_pump_details", pump_id="PUMP-007")]
    )
    server = FakeOllamaServer([first, HOLD if point == "model" else reply("unreachable")])
    with server.running():
        settings = settings_at(tmp_path, database_target, Ollama={"Host": server.host, "TimeoutSeconds": 60})
        async with open_app(settings):
            pass  # the database exists before the child starts
        child = Child(
            ["turn", str(settings.resolve("appsettings.json")), "Raise a work order for PUMP-007"],
            pause="" if point == "model" else point,
            log=tmp_path / "child.log",
        )

        def reached(events: list[Event]) -> bool:
            if point == "model":
                return server.holding.is_set() and sum(e["event"] == "tool" for e in events) == 2
            if point == "tool":
                return paused(events) and any(e.get("name") == "work_orders-create_work_order" for e in events)
            return paused(events)

        events = child.wait_until(reached)
        child.kill()
        tally["kill_points"] += 1

    finished = [e for e in events if e["event"] == "tool"]
    async with open_app(settings) as app:
        assert await consistency_problems(app) == []
        rows = [(r["function"], r["outcome"]) for r in await app.db.fetch_all("SELECT * FROM audit_log ORDER BY id")]
        pending = [e["summary"].split()[-1] for e in finished if e["status"] == "pending_approval"]
        present = [(e["name"], e["status"]) in rows for e in finished]
        for approval_id in pending:
            present.append((await app.approvals.get(approval_id)).status.value == "pending")
        assert count_lost(tally, present) == 0, (finished, rows)
        if point == "audit":
            assert ("assets-get_pump_details", "ok") not in rows  # the half-written row rolled back whole
        for approval_id in pending:
            await reapprove_once(app, approval_id)
        assert await consistency_problems(app) == []
        counted = await app.db.fetch_one("SELECT COUNT(*) AS n FROM work_orders")
        assert counted is not None and counted["n"] == len(pending)


# --- an approval's execution --------------------------------------------------------------------------------


@pytest.mark.parametrize("point", ["before_write", "in_write", "after_commit"])
async def test_an_approval_killed_mid_execution_runs_exactly_once_when_approved_again(
    point: str, tmp_path: Path, database_target: str | Path, tally: Counter[str]
) -> None:
    settings = settings_at(tmp_path, database_target)
    async with open_app(settings) as app:
        with acting_as(CallContext(principal="alice", session="s1", door="test")):
            function = app.kernel.get_function("work_orders", "create_work_order")
            invoked = await app.kernel.invoke(function, KernelArguments(**ORDER))
            assert invoked is not None
            parked = json.loads(str(invoked.value))
    approval_id = parked["approval_id"]
    child = Child(
        ["approve", str(settings.resolve("appsettings.json")), approval_id], pause=point, log=tmp_path / "child.log"
    )
    events = child.wait_until(paused)
    child.kill()
    tally["kill_points"] += 1

    async with open_app(settings) as app:
        assert await consistency_problems(app) == []
        approval = await app.approvals.get(approval_id)
        decisions = await app.db.fetch_all(
            "SELECT outcome FROM audit_log WHERE function = 'approvals-approve' AND principal = 'supervisor'"
        )
        present = [[r["outcome"] for r in decisions] == ["ok"]]  # the claim was audited before the write began
        committed = [e for e in events if e["event"] == "committed"]
        if point == "after_commit":
            work_order = json.loads(committed[0]["result"])["work_order_id"]
            row = await app.db.fetch_one("SELECT approval_id FROM work_orders WHERE work_order_id = ?", (work_order,))
            present += [row is not None and row["approval_id"] == approval_id, approval.status.value == "executed"]
        else:
            assert approval.status.value == "approved" and await work_orders_of(app, approval_id) == 0
        assert count_lost(tally, present) == 0
        await reapprove_once(app, approval_id)
        assert await consistency_problems(app) == []


# --- an ingestion ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("point", ["after_first_batch", "in_manifest"])
async def test_an_ingestion_killed_midway_leaves_an_index_that_opens_and_a_reingest_completes(
    point: str, tmp_path: Path, database_target: str | Path, tally: Counter[str]
) -> None:
    folder = tmp_path / "qdrant"
    documents = [str(p) for p in corpus_files()]
    child = Child(["ingest", str(database_target), str(folder), *documents], pause=point, log=tmp_path / "child.log")
    events = child.wait_until(paused)
    child.kill()
    tally["kill_points"] += 1
    batch_stored = any(e["event"] == "committed" for e in events)

    db = await open_database(database_target)
    try:
        manifest = IngestManifest(db, "manuals")
        async with DocumentIndex(IndexConfig(path=str(folder)), HashEmbedder()) as index:
            recorded = [r["chunk_id"] for r in await db.fetch_all("SELECT chunk_id FROM ingest_manifest")]
            stored = await index.existing_ids(recorded) if recorded else set()
            assert count_lost(tally, [chunk in stored for chunk in recorded]) == 0  # the manifest never over-claims
            if point == "in_manifest":
                assert recorded, "the first document should have been recorded before the kill"
            before = await index.count()
            if batch_stored:  # the child saw its first batch of chunks stored before it was killed
                assert count_lost(tally, [before > 0]) == 0
            report = await ingest([Path(p) for p in documents], index, manifest)
            assert report.documents == len(documents) and report.skipped == []
            total = len(await db.fetch_all("SELECT chunk_id FROM ingest_manifest"))
            assert await index.count() == total
            assert before < total if point == "after_first_batch" else before <= total
            assert report.chunks_added == total - before  # only what the crash left out was embedded
            hits = await index.search("bearing temperature rising", 4)
            assert len(hits) == 4
            again = await ingest([Path(p) for p in documents], index, manifest)
            assert (again.chunks_added, again.chunks_removed) == (0, 0)
    finally:
        await db.close()
