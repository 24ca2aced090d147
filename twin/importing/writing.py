"""Writing checked records into the registry inside the caller's transaction; every statement parameterized.

Each kind is matched on its natural key (pump id; pump and sensor type; sensor and timestamp; alarm id; pump,
date, kind and description of a maintenance record), so importing the same files again changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from storage import Connection
from storage.bulk import changed_by_each, insert_new
from twin.importing.records import Record
from twin.importing.sources import RecordKind

BATCH = 10_000
LOOKUP_BATCH = 500


@dataclass
class Counts:
    """What writing one file did: rows added, rows updated, rows already present as given (skipped)."""

    added: int = 0
    updated: int = 0
    skipped: int = 0


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def registry_pumps(conn: Connection) -> set[str]:
    """The pump ids in the registry."""
    return {row[0] for row in await conn.execute_fetchall("SELECT pump_id FROM pumps")}


async def registry_sensors(conn: Connection) -> dict[tuple[str, str], str]:
    """The sensor id of each (pump id, sensor type) in the registry."""
    rows = await conn.execute_fetchall("SELECT pump_id, sensor_type, sensor_id FROM sensors ORDER BY sensor_id")
    return {(row[0], row[1]): row[2] for row in rows}


async def write(conn: Connection, kind: RecordKind, records: list[Record]) -> Counts:
    """Write one chunk of a file's checked records (readings as ``(sensor_id, recorded_at, value)``)."""
    writer = {
        RecordKind.PUMPS: _write_pumps,
        RecordKind.SENSORS: _write_sensors,
        RecordKind.READINGS: _write_readings,
        RecordKind.ALARMS: _write_alarms,
        RecordKind.MAINTENANCE: _write_maintenance,
        RecordKind.WORK_ORDERS: _write_work_orders,
    }[kind]
    return await writer(conn, records)


async def finish(conn: Connection, kind: RecordKind, touched: Iterable[str]) -> None:
    """After a file's last chunk, what follows its records.

    Sensors' latest values follow their newest readings (``touched``: sensor ids); pumps' ``last_maintenance_on``
    their newest maintenance record (``touched``: pump ids).
    """
    if kind is RecordKind.READINGS:
        await conn.executemany(_FOLLOW_NEWEST_READING, [(sensor_id,) for sensor_id in sorted(touched)])
    elif kind is RecordKind.MAINTENANCE:
        await conn.executemany(_FOLLOW_NEWEST_MAINTENANCE, [(pump_id,) for pump_id in sorted(touched)])


async def _upsert(
    conn: Connection,
    records: list[Record],
    select: str,
    insert: str,
    update: str,
) -> Counts:
    """Insert records whose key (first field) is new and update those that differ; ``select`` reads one by key.

    ``update`` takes the record's fields after the key, then the key.
    """
    counts = Counts()
    for chunk in _chunks(records, LOOKUP_BATCH):
        added, changed = [], []
        for record in chunk:
            rows = list(await conn.execute_fetchall(select, record[:1]))
            if not rows:
                added.append(record)
            elif tuple(rows[0]) != record:
                changed.append((*record[1:], record[0]))
        await conn.executemany(insert, added)
        await conn.executemany(update, changed)
        counts.added += len(added)
        counts.updated += len(changed)
        counts.skipped += len(chunk) - len(added) - len(changed)
    return counts


async def _write_pumps(conn: Connection, records: list[Record]) -> Counts:
    columns = (
        "pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, foundation, status, installed_on"
    )
    return await _upsert(
        conn,
        records,
        f"SELECT {columns} FROM pumps WHERE pump_id = ?",
        f"INSERT INTO pumps ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "UPDATE pumps SET name = ?, location = ?, model = ?, power_kw = ?, rated_speed_rpm = ?, machine_group = ?, "
        "foundation = ?, status = ?, installed_on = ? WHERE pump_id = ?",
    )


async def _write_sensors(conn: Connection, records: list[Record]) -> Counts:
    # Keyed on "PUMP-007-vibration", the sensor id the registry gives every sensor (UNIQUE (pump_id, sensor_type)).
    keyed = [(f"{r[0]}-{r[1]}", *r) for r in records]
    return await _upsert(
        conn,
        keyed,
        "SELECT sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold FROM sensors WHERE sensor_id = ?",
        "INSERT INTO sensors (sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        "UPDATE sensors SET pump_id = ?, sensor_type = ?, unit = ?, bad_direction = ?, alarm_threshold = ? "
        "WHERE sensor_id = ?",
    )


async def _write_readings(conn: Connection, records: list[Record]) -> Counts:
    """Readings in one statement per row when they are all new; an existing one is updated when its value differs."""
    counts = Counts()
    for chunk in _chunks(records, BATCH):
        added = await insert_new(conn, "readings", ("sensor_id", "recorded_at", "value"), chunk)
        updated = 0
        if added < len(chunk):  # some were there: those whose value differs are updated (the new ones match)
            updated = await changed_by_each(
                conn, "UPDATE readings SET value = ?3 WHERE sensor_id = ?1 AND recorded_at = ?2 AND value != ?3", chunk
            )
        counts.added += added
        counts.updated += updated
        counts.skipped += len(chunk) - added - updated
    return counts


_FOLLOW_NEWEST_READING = """
    UPDATE sensors SET
        latest_at = (SELECT recorded_at FROM readings r WHERE r.sensor_id = sensors.sensor_id
                     ORDER BY recorded_at DESC LIMIT 1),
        latest_value = (SELECT value FROM readings r WHERE r.sensor_id = sensors.sensor_id
                        ORDER BY recorded_at DESC LIMIT 1)
    WHERE sensor_id = ?1
      AND EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = ?1)
      AND (latest_at IS NULL
           OR latest_at <= (SELECT MAX(recorded_at) FROM readings r WHERE r.sensor_id = ?1))
"""


async def _write_alarms(conn: Connection, records: list[Record]) -> Counts:
    columns = "alarm_id, pump_id, sensor_type, severity, message, value, raised_at, active, cleared_at"
    return await _upsert(
        conn,
        records,
        f"SELECT {columns} FROM alarms WHERE alarm_id = ?",
        f"INSERT INTO alarms ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "UPDATE alarms SET pump_id = ?, sensor_type = ?, severity = ?, message = ?, value = ?, raised_at = ?, "
        "active = ?, cleared_at = ? WHERE alarm_id = ?",
    )


async def _write_maintenance(conn: Connection, records: list[Record]) -> Counts:
    """Maintenance records matched on pump, date, kind and description (a new technician updates one).

    Then (`finish`) each pump's ``last_maintenance_on`` follows its newest record.
    """
    counts = Counts()
    for chunk in _chunks(records, LOOKUP_BATCH):
        added, changed = [], []
        for record in chunk:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT record_id, technician FROM maintenance_records "
                    "WHERE pump_id = ? AND performed_on = ? AND kind = ? AND description = ?",
                    record[:4],
                )
            )
            if not rows:
                added.append(record)
            elif rows[0][1] != record[4]:
                changed.append((record[4], rows[0][0]))
        await conn.executemany(
            "INSERT INTO maintenance_records (pump_id, performed_on, kind, description, technician) "
            "VALUES (?, ?, ?, ?, ?)",
            added,
        )
        await conn.executemany("UPDATE maintenance_records SET technician = ? WHERE record_id = ?", changed)
        counts.added += len(added)
        counts.updated += len(changed)
        counts.skipped += len(chunk) - len(added) - len(changed)
    return counts


async def _write_work_orders(conn: Connection, records: list[Record]) -> Counts:
    """Work orders of the site's CMMS, matched on their id; an imported one has no approval (``approval_id`` NULL).

    Importing them is an administrator's import of what the site already did, not an agent write: it goes through
    no approval (docs/plant-import.md). An id the registry already holds is updated to the file's fields; its
    approval, if it had one, is kept.
    """
    columns = "work_order_id, pump_id, priority, summary, status, created_at, requested_by, approved_by"
    return await _upsert(
        conn,
        records,
        f"SELECT {columns} FROM work_orders WHERE work_order_id = ?",
        f"INSERT INTO work_orders ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        "UPDATE work_orders SET pump_id = ?, priority = ?, summary = ?, status = ?, created_at = ?, requested_by = ?, "
        "approved_by = ? WHERE work_order_id = ?",
    )


_FOLLOW_NEWEST_MAINTENANCE = (
    "UPDATE pumps SET last_maintenance_on = (SELECT MAX(performed_on) FROM maintenance_records m "
    "WHERE m.pump_id = ?1) WHERE pump_id = ?1 AND (last_maintenance_on IS NULL OR last_maintenance_on < "
    "(SELECT MAX(performed_on) FROM maintenance_records m WHERE m.pump_id = ?1))"
)
