"""Live readings of pump sensors (as OPC UA and MQTT sources hand them on) and their batched writing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from storage import Database
from twin.models import SensorType
from twin.timestamps import format_ts


@dataclass(frozen=True, slots=True)
class Reading:
    """One value of one pump sensor at the moment the source says it was measured.

    ``pump_id`` is canonical (``PUMP-007``); ``at`` is timezone-aware UTC, the source's own timestamp (the OPC UA
    source timestamp, the MQTT payload's ``timestamp``), never the time it arrived.
    """

    pump_id: str
    sensor_type: SensorType
    value: float
    at: datetime
    source: str

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            raise ValueError("a reading's time must carry its UTC offset")
        if self.at.tzinfo is not UTC:
            object.__setattr__(self, "at", self.at.astimezone(UTC))


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """What storing one batch did: the readings written (oldest first), and how many were dropped and why."""

    inserted: list[Reading]
    duplicates: int
    unknown: int


_INSERT = "INSERT OR IGNORE INTO readings (sensor_id, recorded_at, value) VALUES (?, ?, ?)"
# Rows per INSERT ... RETURNING statement: 3 parameters a row stay under SQLite's oldest limit of 999 parameters.
_ROWS_PER_INSERT = 300
_LATEST = (
    "UPDATE sensors SET latest_value = ?3, latest_at = ?2 "
    "WHERE sensor_id = ?1 AND (latest_at IS NULL OR latest_at < ?2)"
)


class _SomeStoredAlready(Exception):
    """Raised inside the optimistic write to roll it back: some rows of the batch were stored already."""


class ReadingStore:
    """Writes batches of live readings into the registry's ``readings`` table, each batch in one transaction.

    Rules:
    - A reading is keyed on its sensor and its time at whole-second resolution (the registry's timestamp form,
      ``YYYY-MM-DDTHH:MM:SSZ``); a reading whose key is already stored, or repeats an earlier one of the same
      batch, is a duplicate: dropped and counted, never overwriting the stored value.
    - A reading of a pump or sensor type the registry does not know is not written, only counted; the sensor
      list is read again (once per batch) when a batch names one not known yet, so sensors added while running
      are found.
    - A sensor's ``latest_value``/``latest_at`` move only forward: a late (out-of-order) reading is stored in
      the history but never replaces a newer latest value.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._sensor_ids: dict[tuple[str, SensorType], str] = {}

    async def store(self, readings: Sequence[Reading]) -> StoredBatch:
        """Write one batch in one transaction; return what was inserted (sorted by time) and what was dropped."""
        keyed, unknown = self._key(readings)
        if unknown and await self._refresh():
            keyed, unknown = self._key(readings)
        rows = [(sensor_id, at, reading.value) for (sensor_id, at), reading in keyed.items()]
        if not rows:
            return StoredBatch(inserted=[], duplicates=len(readings) - unknown, unknown=unknown)
        try:
            # Optimistic: one executemany, the common case of a batch with no reading stored before.
            async with self._db.transaction() as conn:
                before = conn.total_changes
                await conn.executemany(_INSERT, rows)
                if conn.total_changes - before != len(rows):
                    raise _SomeStoredAlready
                await conn.executemany(_LATEST, _newest(rows))
            written: Iterable[tuple[str, str]] = keyed
        except _SomeStoredAlready:
            # Replayed readings (a source reconnecting): write again, learning which rows are new.
            written = await self._store_returning(rows)
        inserted = sorted((keyed[key] for key in written), key=_time)
        return StoredBatch(inserted=inserted, duplicates=len(readings) - unknown - len(inserted), unknown=unknown)

    async def _store_returning(self, rows: list[tuple[str, str, float]]) -> set[tuple[str, str]]:
        """Insert rows naming those actually inserted (RETURNING skips the keys OR IGNORE left alone)."""
        written: set[tuple[str, str]] = set()
        async with self._db.transaction() as conn:
            for start in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[start : start + _ROWS_PER_INSERT]
                sql = (
                    "INSERT OR IGNORE INTO readings (sensor_id, recorded_at, value) VALUES "
                    + ",".join(["(?, ?, ?)"] * len(chunk))
                    + " RETURNING sensor_id, recorded_at"
                )
                returned = await conn.execute_fetchall(sql, [field for row in chunk for field in row])
                written.update((row[0], row[1]) for row in returned)
            await conn.executemany(_LATEST, _newest([row for row in rows if (row[0], row[1]) in written]))
        return written

    def _key(self, readings: Sequence[Reading]) -> tuple[dict[tuple[str, str], Reading], int]:
        """The batch's known readings by (sensor id, stored time), first of a key kept; and how many are unknown."""
        sensor_ids = self._sensor_ids
        stamps: dict[datetime, str] = {}  # readings of one moment share a timestamp: format it once
        keyed: dict[tuple[str, str], Reading] = {}
        unknown = 0
        for reading in readings:
            sensor_id = sensor_ids.get((reading.pump_id, reading.sensor_type))
            if sensor_id is None:
                unknown += 1
                continue
            at = stamps.get(reading.at)
            if at is None:
                at = stamps[reading.at] = format_ts(reading.at)
            keyed.setdefault((sensor_id, at), reading)
        return keyed, unknown

    async def _refresh(self) -> bool:
        """Read the sensor list again; True when it changed."""
        rows = await self._db.fetch_all("SELECT sensor_id, pump_id, sensor_type FROM sensors")
        fresh = {(row["pump_id"], SensorType(row["sensor_type"])): row["sensor_id"] for row in rows}
        changed = fresh != self._sensor_ids
        self._sensor_ids = fresh
        return changed


def _newest(rows: Iterable[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Each sensor's newest row (sensor id, time, value)."""
    newest: dict[str, tuple[str, str, float]] = {}
    for row in rows:
        held = newest.get(row[0])
        if held is None or row[1] > held[1]:
            newest[row[0]] = row
    return list(newest.values())


def _time(reading: Reading) -> datetime:
    return reading.at
