"""What automatic triage stores per alarm (`alarm_triage`, migration 6) and what it delivers per triage turn.

Rules kept here:

- Every alarm gets exactly one `alarm_triage` row once automatic triage has seen it; an alarm without a row
  is pending. A ``failed`` row whose ``result.attempts`` is below `MAX_ATTEMPTS` is pending again (retried once
  on a later poll); at `MAX_ATTEMPTS` it is failed for good.
- First run: when `alarm_triage` holds no row at all as an `AutoTriage` starts, every alarm already stored is
  recorded ``skipped`` (`EXISTED_BEFORE`), so enabling automatic triage does not triage a plant's history. The
  rule needs no marker table: once any alarm was seen the table is never empty again. A database with no
  alarms at all keeps an empty table, so each start against it takes the (empty) baseline again, and alarms
  stored while no `AutoTriage` ran against such a database count as history.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from doors.triage import Urgency
from storage import Database
from twin.alarms import Alarm, alarm_from_row
from twin.timestamps import format_ts

MAX_ATTEMPTS = 2
"""A failed triage turn is tried once more on a later poll, then recorded failed for good."""
EXISTED_BEFORE = "existed before automatic triage started"
CLEARED_BEFORE = "cleared before triage"
MAX_PENDING_READ = 1000
"""At most this many pending alarms are read per poll; the rest wait for the next one."""

_SEVERITY_RANK = "CASE a.severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END"


class TriageStatus(str, Enum):
    """What automatic triage did with an alarm."""

    TRIAGED = "triaged"
    """Assessed on its own by one triage turn."""
    BATCHED = "batched"
    """Assessed with other alarms in one fleet-level triage turn (a flood beyond `MaxPerMinute`)."""
    SKIPPED = "skipped"
    """Not assessed: it existed before automatic triage started, or it cleared before its turn came."""
    FAILED = "failed"
    """The triage turn failed (the model service); see the reason and ``result.attempts``."""


class Evidence(BaseModel):
    """One tool call the triage turn made, with its short result."""

    model_config = ConfigDict(frozen=True)
    name: str
    arguments: dict[str, Any]
    status: str
    summary: str
    approval_id: str | None = None


class TriageReport(BaseModel):
    """The result of one triage turn, as stored in `alarm_triage.result` and delivered to the sinks.

    A stored row names its own alarm in ``alarm_id``/``pump_id``; the report delivered for a fleet-level
    (batched) turn has ``alarm_id`` and ``pump_id`` None and lists every alarm it covers in ``alarm_ids``.
    """

    model_config = ConfigDict(frozen=True)
    status: TriageStatus
    alarm_id: str | None
    pump_id: str | None
    alarm_ids: list[str]
    pump_ids: list[str]
    urgency: Urgency | None = None
    answer: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    approval_ids: list[str] = Field(default_factory=list)
    """Writes the turn proposed, parked for a supervisor's approval (``APR-…``); none was executed."""
    batch_id: str | None = None
    reason: str | None = None
    attempts: int = 1
    undelivered: list[str] = Field(default_factory=list)
    """The sinks that could not take this report, each with why (the record is stored all the same)."""
    recorded_at: str

    def for_alarm(self, alarm: Alarm) -> TriageReport:
        """This report as stored on ``alarm``'s row."""
        return self.model_copy(update={"alarm_id": alarm.alarm_id, "pump_id": alarm.pump_id})


class TriageRecord(BaseModel):
    """One `alarm_triage` row."""

    model_config = ConfigDict(frozen=True)
    alarm_id: str
    status: TriageStatus
    reason: str | None
    urgency: Urgency | None
    batch_id: str | None
    result: TriageReport | None
    recorded_at: str


def now_text() -> str:
    """The current time as stored: ISO-8601 UTC, ``YYYY-MM-DDTHH:MM:SSZ`` (as twin/ writes timestamps)."""
    return format_ts(datetime.now(UTC))


class Pending(BaseModel):
    """An alarm waiting for triage, and how many triage turns already failed on it."""

    model_config = ConfigDict(frozen=True)
    alarm: Alarm
    attempts: int


class TriageLog:
    """The `alarm_triage` table: pending alarms, the first-run baseline, writing and listing records."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def baseline(self) -> list[TriageRecord]:
        """On a first run (no row at all), record every stored alarm ``skipped`` as history; else record nothing."""
        at = now_text()
        async with self._db.transaction() as conn:
            async with conn.execute("SELECT 1 FROM alarm_triage LIMIT 1") as cursor:
                if await cursor.fetchone() is not None:
                    return []
            async with conn.execute("SELECT alarm_id FROM alarms ORDER BY raised_at, alarm_id") as cursor:
                ids = [row["alarm_id"] for row in await cursor.fetchall()]
            await conn.executemany(
                "INSERT INTO alarm_triage (alarm_id, status, reason, recorded_at) VALUES (?, 'skipped', ?, ?)",
                [(alarm_id, EXISTED_BEFORE, at) for alarm_id in ids],
            )
        return [
            TriageRecord(
                alarm_id=alarm_id,
                status=TriageStatus.SKIPPED,
                reason=EXISTED_BEFORE,
                urgency=None,
                batch_id=None,
                result=None,
                recorded_at=at,
            )
            for alarm_id in ids
        ]

    async def pending(self) -> list[Pending]:
        """Alarms with no row, or with a failed row still due its retry; most severe, then oldest first."""
        attempts = self._db.dialect.json_number("t.result", "attempts")
        rows = await self._db.fetch_all(
            f"SELECT a.*, COALESCE({attempts}, 0) AS attempts FROM alarms a "
            "LEFT JOIN alarm_triage t ON t.alarm_id = a.alarm_id "
            f"WHERE t.alarm_id IS NULL OR (t.status = 'failed' AND COALESCE({attempts}, "
            f"?1) < ?1) ORDER BY {_SEVERITY_RANK} DESC, a.raised_at, a.alarm_id LIMIT ?2",
            (MAX_ATTEMPTS, MAX_PENDING_READ),
        )
        return [Pending(alarm=alarm_from_row(row), attempts=int(row["attempts"])) for row in rows]

    async def write(self, records: list[TriageRecord]) -> None:
        """Store ``records`` in one transaction; a record replaces the alarm's earlier (failed) row."""
        async with self._db.transaction() as conn:
            await conn.executemany(
                "INSERT INTO alarm_triage (alarm_id, status, reason, urgency, batch_id, result, recorded_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (alarm_id) DO UPDATE SET status = excluded.status, "
                "reason = excluded.reason, urgency = excluded.urgency, batch_id = excluded.batch_id, "
                "result = excluded.result, recorded_at = excluded.recorded_at",
                [_row(record) for record in records],
            )

    async def latest(self, limit: int = 100) -> list[TriageRecord]:
        """The latest ``limit`` records, newest first."""
        # Records of one second (recorded_at is whole seconds) newest alarm first: a longer id of one scheme is a
        # higher number (ALM-10000 after ALM-9999), so length then text orders ids as numbers on either engine.
        rows = await self._db.fetch_all(
            "SELECT * FROM alarm_triage ORDER BY recorded_at DESC, LENGTH(alarm_id) DESC, alarm_id DESC LIMIT ?",
            (max(1, limit),),
        )
        return [_record(row) for row in rows]


def _row(record: TriageRecord) -> tuple[Any, ...]:
    result = record.result.model_dump_json() if record.result is not None else None
    urgency = record.urgency.value if record.urgency is not None else None
    return (
        record.alarm_id,
        record.status.value,
        record.reason,
        urgency,
        record.batch_id,
        result,
        record.recorded_at,
    )


def _record(row: Any) -> TriageRecord:
    result = TriageReport.model_validate(json.loads(row["result"])) if row["result"] else None
    return TriageRecord(
        alarm_id=row["alarm_id"],
        status=TriageStatus(row["status"]),
        reason=row["reason"],
        urgency=Urgency(row["urgency"]) if row["urgency"] else None,
        batch_id=row["batch_id"],
        result=result,
        recorded_at=row["recorded_at"],
    )
