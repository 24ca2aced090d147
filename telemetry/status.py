"""Where each live source stands, kept in the database so `pumpops telemetry status` can read it from anywhere."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from pydantic import BaseModel

from storage import Database
from telemetry.sources.base import SourceState, SourceStatus
from twin.timestamps import format_ts

_UPSERT = """
    INSERT INTO telemetry_sources
        (name, kind, state, detail, received, malformed, last_value_at, refused, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (name) DO UPDATE SET
        kind = excluded.kind, state = excluded.state, detail = excluded.detail, received = excluded.received,
        malformed = excluded.malformed, last_value_at = excluded.last_value_at, refused = excluded.refused,
        updated_at = excluded.updated_at
"""


class SourceRecord(BaseModel):
    """A source as last recorded: its state, counters and when the service last wrote them."""

    name: str
    kind: str
    state: SourceState
    detail: str | None
    received: int
    malformed: int
    last_value_at: str | None
    refused: list[str]
    """What the server refused on the source's last connect, each ``"<node> (<reason>)"``."""
    updated_at: str


class StatusBoard:
    """The sources' latest statuses, written to ``telemetry_sources``.

    A change of state is written at once; counters, which move with every message, are written by `flush` (the
    service calls it once a second), so a busy source costs one small write a second, not one per message.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._latest: dict[str, SourceStatus] = {}
        self._written: dict[str, SourceStatus] = {}
        self._lock = asyncio.Lock()

    @property
    def latest(self) -> dict[str, SourceStatus]:
        """Each source's latest status, by name."""
        return dict(self._latest)

    async def report(self, status: SourceStatus) -> None:
        """Keep ``status`` as the source's latest; write it now when its state, detail or refused nodes changed."""
        before = self._latest.get(status.name)
        self._latest[status.name] = status
        if before is None or (before.state, before.detail, before.refused) != (
            status.state,
            status.detail,
            status.refused,
        ):
            await self.flush()

    def note(self, status: SourceStatus) -> None:
        """Keep ``status`` as the source's latest without writing it now (its counters moved; `flush` writes it).

        A state or detail change is for `report`, which writes at once; one that arrives here is written by the
        next `flush` all the same.
        """
        self._latest[status.name] = status

    async def flush(self) -> None:
        """Write every status that changed since it was last written."""
        async with self._lock:
            changed = [s for name, s in self._latest.items() if self._written.get(name) != s]
            if not changed:
                return
            now = format_ts(datetime.now(UTC))
            await self._db.execute_many(_UPSERT, [_row(s, now) for s in changed])
            for status in changed:
                self._written[status.name] = status

    async def forget_others(self, names: set[str]) -> None:
        """Remove the recorded sources no longer configured (renamed or removed from the settings)."""
        async with self._db.transaction() as conn:
            rows = await (await conn.execute("SELECT name FROM telemetry_sources")).fetchall()
            gone = [(row[0],) for row in rows if row[0] not in names]
            await conn.executemany("DELETE FROM telemetry_sources WHERE name = ?", gone)


async def read_statuses(db: Database) -> list[SourceRecord]:
    """Every recorded source, by name."""
    rows = await db.fetch_all(
        "SELECT name, kind, state, detail, received, malformed, last_value_at, refused, updated_at "
        "FROM telemetry_sources ORDER BY name"
    )
    return [
        SourceRecord.model_validate({**dict(row), "refused": json.loads(row["refused"]) if row["refused"] else []})
        for row in rows
    ]


def _row(status: SourceStatus, now: str) -> tuple[object, ...]:
    last = format_ts(status.last_value_at) if status.last_value_at is not None else None
    return (
        status.name,
        status.kind,
        status.state.value,
        status.detail,
        status.received,
        status.malformed,
        last,
        json.dumps(list(status.refused)) if status.refused else None,
        now,
    )
