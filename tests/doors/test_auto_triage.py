"""Automatic triage: new alarms are triaged within the budget, stored, delivered; history is skipped; writes park."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from doors.auto_triage import (
    CLEARED_BEFORE,
    EXISTED_BEFORE,
    AutoTriage,
    TriageAlreadyRunning,
    TriageLease,
    TriageLog,
    TriageRecord,
    TriageReport,
    TriageStatus,
)
from doors.triage import Urgency
from kernel_setup import AppContext, Settings, load_settings, open_app
from tests.fakes.ollama import ScriptedOllama, Step, call, reply
from tests.postgres_server import database_section

# The model's own moves, as scripted, without the turn's policies acting around them.
MODEL_ONLY = {"ParkedAnswer": False, "StatusQuestions": False, "FollowUpCalls": False}
ANSWER = "The bearing runs hot on this pump and needs a check soon.\nURGENCY: within 24 h"
SAMPLE_ALARMS = 7


def settings_for(
    tmp_path: Path, triage: dict[str, Any] | None = None, *, database: str | Path | None = None, **sections: Any
) -> Settings:
    """Settings for one test on ``database`` (the `database_target` fixture; left out: the SQLite file data/t.db)."""
    path = tmp_path / "appsettings.json"
    document = {
        "Database": database_section(database, "data/t.db") if database is not None else {"Path": "data/t.db"},
        "Qdrant": {"Path": ":memory:"},
        "Agent": MODEL_ONLY,
        "Triage": {"File": None, **(triage or {})},
        **sections,
    }
    path.write_text(json.dumps(document))
    return load_settings(path, env={})


async def add_alarm(
    app: AppContext,
    alarm_id: str,
    *,
    pump: str = "PUMP-003",
    severity: str = "high",
    sensor: str | None = "bearing_temperature",
    active: bool = True,
    raised_at: str = "2026-12-01T10:00:00Z",
) -> None:
    async with app.db.transaction() as conn:
        await conn.execute(
            "INSERT INTO alarms (alarm_id, pump_id, sensor_type, severity, message, value, raised_at, active) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (alarm_id, pump, sensor, severity, "Bearing temperature above threshold", 91.5, raised_at, int(active)),
        )


async def count(app: AppContext, sql: str) -> int:
    row = await app.db.fetch_one(sql)
    assert row is not None
    return int(row[0])


async def baselined(app: AppContext, triage: AutoTriage) -> None:
    """Run the first poll, which records the sample fleet's alarms as history."""
    records = await triage.run_once()
    assert len(records) == SAMPLE_ALARMS and {r.reason for r in records} == {EXISTED_BEFORE}


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Webhook:
    """A tiny HTTP server on 127.0.0.1: answers the scripted statuses in turn, records each request body."""

    statuses: list[int]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        self.bodies.append(json.loads(await reader.readexactly(length)))
        status = self.statuses.pop(0) if self.statuses else 200
        writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode())
        await writer.drain()
        writer.close()
        await writer.wait_closed()


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    hook = Webhook(statuses=[500, 200])
    server = await asyncio.start_server(hook.handle, "127.0.0.1", 0)
    hook.port = server.sockets[0].getsockname()[1]
    async with server:
        yield hook


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_new_alarm_is_triaged_stored_written_to_the_file_and_posted_to_the_webhook(
    tmp_path: Path, database_target: str | Path, webhook: Webhook
) -> None:
    url = f"http://127.0.0.1:{webhook.port}/triage"
    settings = settings_for(
        tmp_path, {"File": "out/triage.jsonl", "WebhookUrl": url, "WebhookAttempts": 3}, database=database_target
    )
    fake = ScriptedOllama([reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-003")]), reply(ANSWER)])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        triage = AutoTriage(app, settings.triage, webhook_backoff_seconds=0.01)
        await baselined(app, triage)
        await add_alarm(app, "ALM-0100")
        [record] = await triage.run_once()
        stored = await TriageLog(app.db).latest(1)
        audit = await app.db.fetch_all("SELECT DISTINCT principal, door FROM audit_log")
    assert record.alarm_id == "ALM-0100" and record.status is TriageStatus.TRIAGED
    assert record.urgency is Urgency.WITHIN_24_H and record.reason is None and record.batch_id is None
    assert stored == [record]
    result = record.result
    assert result is not None and result.alarm_id == "ALM-0100" and result.pump_id == "PUMP-003"
    assert result.answer == ANSWER and result.approval_ids == [] and result.undelivered == []
    assert [(e.name, e.status) for e in result.evidence] == [("assets-get_pump_details", "ok")]
    assert result.evidence[0].summary  # the tool's short result
    assert (
        "Triage alarm ALM-0100: high bearing_temperature alarm on pump PUMP-003"
        in (fake.requests[0]["messages"][-1]["content"])
    )
    lines = (tmp_path / "out" / "triage.jsonl").read_text().splitlines()
    assert [json.loads(line)["alarm_id"] for line in lines] == ["ALM-0100"]  # history is not delivered
    assert TriageReport.model_validate_json(lines[0]) == result
    # The first POST was answered 500; the retry delivered the same report.
    assert len(webhook.bodies) == 2 and webhook.bodies[0] == webhook.bodies[1] == json.loads(lines[0])
    assert {(r["principal"], r["door"]) for r in audit} == {("automation:triage", "triage")}


async def test_the_first_run_records_existing_alarms_as_history_and_later_alarms_are_triaged(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, database=database_target)
    fake = ScriptedOllama([reply(ANSWER), reply(ANSWER)])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        first = AutoTriage(app, settings.triage)
        records = await first.run_once()
        assert fake.requests == []
        assert {r.status for r in records} == {TriageStatus.SKIPPED}
        assert len(records) == await count(app, "SELECT COUNT(*) FROM alarms") == SAMPLE_ALARMS
        assert await first.run_once() == []
        # A later start finds the table in use: no baseline, the new alarm is triaged.
        await add_alarm(app, "ALM-0100")
        later = AutoTriage(app, settings.triage)
        [record] = await later.run_once()
        assert record.alarm_id == "ALM-0100" and record.status is TriageStatus.TRIAGED
        assert await count(app, "SELECT COUNT(*) FROM alarm_triage WHERE status = 'skipped'") == SAMPLE_ALARMS


async def test_a_flood_takes_the_budget_one_by_one_then_one_batch_and_the_rest_waits(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, {"MaxPerMinute": 2}, database=database_target)
    batch_answer = "PUMP-001 and PUMP-002 share a cause: a process upset.\nURGENCY: immediate"
    # Each triage answered before any read is read for and asked again (the claim rule): two replies a turn.
    fake = ScriptedOllama([*[reply(ANSWER)] * 4, *[reply(batch_answer)] * 2, *[reply(ANSWER)] * 4])
    clock = Clock()
    async with open_app(settings, chat_transport=fake.transport()) as app:
        triage = AutoTriage(app, settings.triage, clock=clock)
        await baselined(app, triage)
        await add_alarm(app, "ALM-0100", severity="medium", pump="PUMP-001")
        await add_alarm(app, "ALM-0101", severity="critical", pump="PUMP-001", sensor="vibration")
        await add_alarm(app, "ALM-0102", severity="low", pump="PUMP-002")
        await add_alarm(app, "ALM-0103", severity="high", pump="PUMP-002")
        await add_alarm(app, "ALM-0104", severity="medium", pump="PUMP-002", raised_at="2026-12-01T09:00:00Z")
        await add_alarm(app, "ALM-0105", active=False)
        records = await triage.run_once()
        by_id = {r.alarm_id: r for r in records}
        assert len(records) == 6 and len(fake.requests) == 6
        assert by_id["ALM-0105"].status is TriageStatus.SKIPPED and by_id["ALM-0105"].reason == CLEARED_BEFORE
        # Most severe first: the critical and the high alarm get their own turns.
        assert [r.alarm_id for r in records if r.status is TriageStatus.TRIAGED] == ["ALM-0101", "ALM-0103"]
        batched = [r for r in records if r.status is TriageStatus.BATCHED]
        assert [r.alarm_id for r in batched] == ["ALM-0104", "ALM-0100", "ALM-0102"]
        assert len({r.batch_id for r in batched}) == 1 and batched[0].batch_id is not None
        assert all(r.urgency is Urgency.IMMEDIATE for r in batched)
        report = batched[0].result
        assert report is not None and report.alarm_id == "ALM-0104" and report.pump_id == "PUMP-002"
        assert report.alarm_ids == ["ALM-0104", "ALM-0100", "ALM-0102"] and report.pump_ids == ["PUMP-002", "PUMP-001"]
        prompt = fake.requests[4]["messages"][-1]["content"]
        assert prompt.startswith("Fleet triage: 3 new alarms on 2 pumps")
        for alarm_id in ("ALM-0100", "ALM-0102", "ALM-0104"):
            assert f"- {alarm_id}: " in prompt
        assert "URGENCY: <one of the choices above>" in prompt
        # Both budgets are spent for this minute: new alarms wait, nothing is lost.
        await add_alarm(app, "ALM-0106")
        await add_alarm(app, "ALM-0107")
        assert await triage.run_once() == []
        assert len(fake.requests) == 6
        clock.now += 61
        later = await triage.run_once()
        assert [(r.alarm_id, r.status) for r in later] == [
            ("ALM-0106", TriageStatus.TRIAGED),
            ("ALM-0107", TriageStatus.TRIAGED),
        ]
        untracked = "SELECT COUNT(*) FROM alarms a LEFT JOIN alarm_triage t USING (alarm_id) WHERE t.alarm_id IS NULL"
        assert await count(app, untracked) == 0


async def test_a_failed_turn_is_tried_once_more_then_failed_for_good(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, {"File": "triage.jsonl"}, database=database_target)
    broken: list[Step] = [httpx.Response(500, json={"error": "model crashed"}) for _ in range(2)]
    fake = ScriptedOllama(broken)
    async with open_app(settings, chat_transport=fake.transport()) as app:
        triage = AutoTriage(app, settings.triage)
        await baselined(app, triage)
        await add_alarm(app, "ALM-0100")
        [first] = await triage.run_once()
        assert first.status is TriageStatus.FAILED and first.reason is not None
        assert "model crashed" in first.reason and "attempt 1 of 2; tried once more" in first.reason
        assert not (tmp_path / "triage.jsonl").exists()  # not final: not delivered
        [second] = await triage.run_once()
        assert second.status is TriageStatus.FAILED and second.reason is not None
        assert "attempt 2 of 2; failed for good" in second.reason
        assert second.result is not None and second.result.attempts == 2
        assert await triage.run_once() == []
        assert len(fake.requests) == 2
    [line] = (tmp_path / "triage.jsonl").read_text().splitlines()
    assert json.loads(line)["status"] == "failed" and json.loads(line)["alarm_ids"] == ["ALM-0100"]


async def test_a_proposed_work_order_is_parked_not_created_and_the_record_names_the_approval(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, database=database_target)
    order = call("work_orders-create_work_order", pump_id="PUMP-003", priority="high", summary="Check bearing")
    fake = ScriptedOllama(
        [reply(tool_calls=[order]), reply("A work order is proposed and waits for approval.\nURGENCY: within 24 h")]
    )
    async with open_app(settings, chat_transport=fake.transport()) as app:
        triage = AutoTriage(app, settings.triage)
        await baselined(app, triage)
        await add_alarm(app, "ALM-0100")
        [record] = await triage.run_once()
        assert await count(app, "SELECT COUNT(*) FROM work_orders") == 0
        pending = (await app.approvals.list("pending")).approvals
    assert len(pending) == 1 and pending[0].requested_by == "automation:triage"
    assert record.status is TriageStatus.TRIAGED and record.result is not None
    assert record.result.approval_ids == [pending[0].id]
    [evidence] = record.result.evidence
    assert (evidence.name, evidence.status, evidence.approval_id) == (
        "work_orders-create_work_order",
        "pending_approval",
        pending[0].id,
    )


async def test_a_failing_sink_is_named_on_the_stored_record_and_the_other_sinks_still_deliver(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    url = f"http://127.0.0.1:{free_port()}/nobody-listens"
    settings = settings_for(
        tmp_path, {"File": "triage.jsonl", "WebhookUrl": url, "WebhookAttempts": 2}, database=database_target
    )
    fake = ScriptedOllama([reply(ANSWER), reply(ANSWER)])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        triage = AutoTriage(app, settings.triage, webhook_backoff_seconds=0.01)
        await baselined(app, triage)
        await add_alarm(app, "ALM-0100")
        [record] = await triage.run_once()
        [stored] = await TriageLog(app.db).latest(1)
    assert record.status is TriageStatus.TRIAGED and stored == record
    assert stored.result is not None and len(stored.result.undelivered) == 1
    assert stored.result.undelivered[0].startswith("webhook: webhook sink: 2 attempt(s) failed; last: ConnectError")
    assert json.loads((tmp_path / "triage.jsonl").read_text())["alarm_id"] == "ALM-0100"


@dataclass
class Collector:
    """A sink that hands each report to the test."""

    reports: asyncio.Queue[TriageReport] = field(default_factory=asyncio.Queue)
    name: str = "collector"

    async def deliver(self, report: TriageReport) -> None:
        await self.reports.put(report)


async def test_run_polls_until_cancelled(tmp_path: Path, database_target: str | Path) -> None:
    settings = settings_for(tmp_path, {"PollSeconds": 0.01}, database=database_target)
    fake = ScriptedOllama([reply(ANSWER), reply(ANSWER)])
    collector = Collector()
    async with open_app(settings, chat_transport=fake.transport()) as app:
        await TriageLog(app.db).baseline()
        triage = AutoTriage(app, settings.triage, sinks=[collector])
        task = asyncio.create_task(triage.run())
        await add_alarm(app, "ALM-0100")
        async with asyncio.timeout(30):
            report = await collector.reports.get()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        records: list[TriageRecord] = await TriageLog(app.db).latest()
    assert report.alarm_id == "ALM-0100" and records[0].alarm_id == "ALM-0100"


async def test_a_second_dispatcher_on_the_same_database_is_refused_until_the_first_stops(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, {"PollSeconds": 0.05}, database=database_target)
    async with open_app(settings, chat_transport=ScriptedOllama([]).transport()) as app:
        first = asyncio.create_task(AutoTriage(app, settings.triage).run())
        await asyncio.sleep(0.2)  # the first poll has run and the lease is held
        assert not first.done()
        lease = TriageLease(settings.database_target)
        with pytest.raises(TriageAlreadyRunning, match=f"process {os.getpid()}"):
            await lease.acquire()
        with pytest.raises(TriageAlreadyRunning):
            await AutoTriage(app, settings.triage).run()
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        await lease.acquire()  # free again once the first stopped
        await lease.release()
