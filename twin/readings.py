"""Live readings of pump sensors (as OPC UA and MQTT sources hand them on) and their batched writing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter, itemgetter

from storage import Database
from storage.bulk import STATEMENT_PARAMETERS, insert_new
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


_COLUMNS = ("sensor_id", "recorded_at", "value")
# Rows per INSERT ... RETURNING statement: as many as one statement's parameters hold, 3 a row.
_ROWS_PER_INSERT = STATEMENT_PARAMETERS // len(_COLUMNS)
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
        rows, known, unknown = self._rows(readings)
        if unknown and await self._refresh():
            rows, known, unknown = self._rows(readings)
        if not rows:
            return StoredBatch(inserted=[], duplicates=0, unknown=unknown)
        try:
            # Optimistic: one bulk insert, the common case of a batch with no duplicate (stored or within it);
            # the unique key ignores any, and a count short of the rows sends the batch down the careful path.
            async with self._db.transaction() as conn:
                if await insert_new(conn, "readings", _COLUMNS, rows) != len(rows):
                    raise _SomeStoredAlready
                await conn.executemany(_LATEST, _newest(rows))
            inserted = sorted(known, key=_AT)
        except _SomeStoredAlready:
            # Replayed readings (a source reconnecting) or repeats within the batch: keep the first of each key,
            # and write again, learning which rows are new.
            keyed: dict[tuple[str, str], Reading] = {}
            for row, reading in zip(rows, known, strict=True):
                keyed.setdefault((row[0], row[1]), reading)
            written = await self._store_returning([(key[0], key[1], reading.value) for key, reading in keyed.items()])
            inserted = sorted((keyed[key] for key in written), key=_AT)
        return StoredBatch(inserted=inserted, duplicates=len(readings) - unknown - len(inserted), unknown=unknown)

    async def _store_returning(self, rows: list[tuple[str, str, float]]) -> set[tuple[str, str]]:
        """Insert rows naming those actually inserted (RETURNING skips the keys the conflict clause left alone)."""
        written: set[tuple[str, str]] = set()
        async with self._db.transaction() as conn:
            for start in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[start : start + _ROWS_PER_INSERT]
                sql = (
                    "INSERT INTO readings (sensor_id, recorded_at, value) VALUES "
                    + ",".join(["(?, ?, ?)"] * len(chunk))
                    + " ON CONFLICT DO NOTHING RETURNING sensor_id, recorded_at"
                )
                returned = await conn.execute_fetchall(sql, [field for row in chunk for field in row])
                written.update((row[0], row[1]) for row in returned)
            await conn.executemany(_LATEST, _newest([row for row in rows if (row[0], row[1]) in written]))
        return written

    def _rows(self, readings: Sequence[Reading]) -> tuple[list[tuple[str, str, float]], list[Reading], int]:
        """The known readings' rows (sensor id, stored time, value) and readings, in arrival order; how many unknown."""
        sensor_ids = self._sensor_ids
        sensor_id_of = sensor_ids.get
        stamps: dict[datetime, str] = {}  # readings of one moment share a timestamp: format it once
        rows: list[tuple[str, str, float]] = []
        unknown = 0
        for reading in readings:
            sensor_id = sensor_id_of((reading.pump_id, reading.sensor_type))
            if sensor_id is None:
                unknown += 1
                continue
            moment = reading.at
            at = stamps.get(moment)
            if at is None:
                at = stamps[moment] = format_ts(moment)
            rows.append((sensor_id, at, reading.value))
        if not unknown:
            return rows, list(readings), 0
        return rows, [r for r in readings if (r.pump_id, r.sensor_type) in sensor_ids], unknown

    async def _refresh(self) -> bool:
        """Read the sensor list again; True when it changed."""
        rows = await self._db.fetch_all("SELECT sensor_id, pump_id, sensor_type FROM sensors")
        fresh = {(row["pump_id"], SensorType(row["sensor_type"])): row["sensor_id"] for row in rows}
        changed = fresh != self._sensor_ids
        self._sensor_ids = fresh
        return changed


def _newest(rows: Iterable[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """Each sensor's newest row (sensor id, time, value); of rows with one key (none here), the last."""
    return list({row[0]: row for row in sorted(rows, key=_STAMP)}.values())


_AT = attrgetter("at")
_STAMP = itemgetter(1)
