"""Live readings of pump sensors (as OPC UA and MQTT sources hand them on) and their batched writing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from storage import Database
from twin.models import SensorType


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


# Rows per INSERT statement: 3 parameters a row keeps a statement under SQLite's oldest limit of 999 parameters.
_ROWS_PER_INSERT = 300


class ReadingStore:
    """Writes batches of live readings into the registry's ``readings`` table, each batch in one transaction.

    Rules:
    - A reading is keyed on its sensor and its time at whole-second resolution (the registry's timestamp form,
      ``YYYY-MM-DDTHH:MM:SSZ``); a reading whose key is already stored, or repeats an earlier one of the same
      batch, is a duplicate: dropped and counted, never overwriting the stored value.
    - A reading of a pump or sensor type the registry does not know is not written, only counted.
    - A sensor's ``latest_value``/``latest_at`` move only forward: a late (out-of-order) reading is stored in
      the history but never replaces a newer latest value.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._sensor_ids: dict[tuple[str, str], str] | None = None

    async def store(self, readings: Sequence[Reading]) -> StoredBatch:
        """Write one batch in one transaction; return what was inserted (sorted by time) and what was dropped."""
        if not readings:
            return StoredBatch(inserted=[], duplicates=0, unknown=0)
        sensor_ids = await self._lookup(readings)
        unknown = 0
        keyed: dict[tuple[str, str], Reading] = {}
        for reading in readings:
            sensor_id = sensor_ids.get((reading.pump_id, reading.sensor_type.value))
            if sensor_id is None:
                unknown += 1
                continue
            # The first reading of a key in the batch wins, as the stored one wins over a repeat.
            keyed.setdefault((sensor_id, format_ts(reading.at)), reading)
        rows = [(sensor_id, at, reading.value) for (sensor_id, at), reading in keyed.items()]
        written: set[tuple[str, str]] = set()
        async with self._db.transaction() as conn:
            for start in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[start : start + _ROWS_PER_INSERT]
                # RETURNING names only the rows actually inserted: OR IGNORE skips the keys already stored.
                sql = (
                    "INSERT OR IGNORE INTO readings (sensor_id, recorded_at, value) VALUES "
                    + ",".join(["(?, ?, ?)"] * len(chunk))
                    + " RETURNING sensor_id, recorded_at"
                )
                returned = await conn.execute_fetchall(sql, [field for row in chunk for field in row])
                written.update((row[0], row[1]) for row in returned)
            newest: dict[str, tuple[str, float]] = {}
            for sensor_id, at, value in rows:
                if (sensor_id, at) in written and (sensor_id not in newest or at > newest[sensor_id][0]):
                    newest[sensor_id] = (at, value)
            await conn.executemany(
                "UPDATE sensors SET latest_value = ?3, latest_at = ?2 "
                "WHERE sensor_id = ?1 AND (latest_at IS NULL OR latest_at < ?2)",
                [(sensor_id, at, value) for sensor_id, (at, value) in newest.items()],
            )
        inserted = sorted((keyed[key] for key in written), key=lambda r: r.at)
        duplicates = len(readings) - unknown - len(inserted)
        return StoredBatch(inserted=inserted, duplicates=duplicates, unknown=unknown)

    async def _lookup(self, readings: Sequence[Reading]) -> dict[tuple[str, str], str]:
        """The sensor id of each (pump id, sensor type); read again once when a batch names one not cached."""
        if self._sensor_ids is None or any((r.pump_id, r.sensor_type.value) not in self._sensor_ids for r in readings):
            rows = await self._db.fetch_all("SELECT sensor_id, pump_id, sensor_type FROM sensors")
            self._sensor_ids = {(row["pump_id"], row["sensor_type"]): row["sensor_id"] for row in rows}
        return self._sensor_ids


def format_ts(value: datetime) -> str:
    """A UTC time as the registry stores it: ``YYYY-MM-DDTHH:MM:SSZ`` (sub-second parts dropped)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
