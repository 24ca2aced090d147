"""Writing checked records into the registry inside the caller's transaction; every statement parameterized.

Each kind is matched on its natural key (pump id; pump and sensor type; sensor and timestamp; alarm id; pump,
date, kind and description of a maintenance record), so importing the same files again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

from twin.importing.records import Problem, Record
from twin.importing.sources import RecordKind

BATCH = 5000
LOOKUP_BATCH = 500
Progress = Callable[[int], None]


@dataclass
class Counts:
    """What writing one file did: rows added, rows updated, rows already present as given (skipped)."""

    added: int = 0
    updated: int = 0
    skipped: int = 0


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def _pumps_present(conn: aiosqlite.Connection, pump_ids: Iterable[str]) -> set[str]:
    wanted = sorted(set(pump_ids))
    present: set[str] = set()
    for chunk in _chunks(wanted, LOOKUP_BATCH):
        marks = ",".join("?" * len(chunk))
        rows = list(await conn.execute_fetchall(f"SELECT pump_id FROM pumps WHERE pump_id IN ({marks})", chunk))
        present.update(row[0] for row in rows)
    return present


async def _sensor_ids(conn: aiosqlite.Connection, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The sensor id of each (pump id, sensor type) that has a sensor."""
    found: dict[tuple[str, str], str] = {}
    for pump_id, sensor_type in sorted(set(pairs)):
        rows = list(
            await conn.execute_fetchall(
                "SELECT sensor_id FROM sensors WHERE pump_id = ? AND sensor_type = ?", (pump_id, sensor_type)
            )
        )
        for row in rows:
            found[(pump_id, sensor_type)] = row[0]
    return found


async def check_references(
    conn: aiosqlite.Connection, kind: RecordKind, good: list[tuple[int, Record]]
) -> tuple[list[tuple[int, Record]], list[Problem]]:
    """Split records into those whose pump (or sensor) is in the registry and problems for the others."""
    if kind is RecordKind.PUMPS:
        return good, []
    pump_at = 1 if kind in (RecordKind.ALARMS, RecordKind.WORK_ORDERS) else 0
    if kind is RecordKind.READINGS:
        sensors = await _sensor_ids(conn, ((r[0], r[1]) for _, r in good))
        problems = [
            Problem(line, f"pump {r[0]} has no {r[1]} sensor: import it in sensors.csv first")
            for line, r in good
            if (r[0], r[1]) not in sensors
        ]
        return [(line, r) for line, r in good if (r[0], r[1]) in sensors], problems
    present = await _pumps_present(conn, (r[pump_at] for _, r in good))
    problems = [
        Problem(line, f"pump {r[pump_at]} is not in the registry: import it in pumps.csv first")
        for line, r in good
        if r[pump_at] not in present
    ]
    return [(line, r) for line, r in good if r[pump_at] in present], problems


async def write(conn: aiosqlite.Connection, kind: RecordKind, records: list[Record], progress: Progress) -> Counts:
    """Write one file's records; ``progress`` hears how many were done after each batch."""
    writer = {
        RecordKind.PUMPS: _write_pumps,
        RecordKind.SENSORS: _write_sensors,
        RecordKind.READINGS: _write_readings,
        RecordKind.ALARMS: _write_alarms,
        RecordKind.MAINTENANCE: _write_maintenance,
        RecordKind.WORK_ORDERS: _write_work_orders,
    }[kind]
    return await writer(conn, records, progress)


async def _upsert(
    conn: aiosqlite.Connection,
    records: list[Record],
    progress: Progress,
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
        progress(len(chunk))
    return counts


async def _write_pumps(conn: aiosqlite.Connection, records: list[Record], progress: Progress) -> Counts:
    columns = (
        "pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, foundation, status, installed_on"
    )
    return await _upsert(
        conn,
        records,
        progress,
        f"SELECT {columns} FROM pumps WHERE pump_id = ?",
        f"INSERT INTO pumps ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "UPDATE pumps SET name = ?, location = ?, model = ?, power_kw = ?, rated_speed_rpm = ?, machine_group = ?, "
        "foundation = ?, status = ?, installed_on = ? WHERE pump_id = ?",
    )


async def _write_sensors(conn: aiosqlite.Connection, records: list[Record], progress: Progress) -> Counts:
    # Keyed on "PUMP-007-vibration", the sensor id the registry gives every sensor (UNIQUE (pump_id, sensor_type)).
    keyed = [(f"{r[0]}-{r[1]}", *r) for r in records]
    return await _upsert(
        conn,
        keyed,
        progress,
        "SELECT sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold FROM sensors WHERE sensor_id = ?",
        "INSERT INTO sensors (sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        "UPDATE sensors SET pump_id = ?, sensor_type = ?, unit = ?, bad_direction = ?, alarm_threshold = ? "
        "WHERE sensor_id = ?",
    )


async def _write_readings(conn: aiosqlite.Connection, records: list[Record], progress: Progress) -> Counts:
    """Readings in batches; then each touched sensor's latest value and time follow its newest reading."""
    sensors = await _sensor_ids(conn, ((r[0], r[1]) for r in records))
    rows = [(sensors[(r[0], r[1])], r[2], r[3]) for r in records]
    counts = Counts()
    for chunk in _chunks(rows, BATCH):
        before = conn.total_changes
        await conn.executemany("INSERT OR IGNORE INTO readings (sensor_id, recorded_at, value) VALUES (?, ?, ?)", chunk)
        added = conn.total_changes - before
        before = conn.total_changes
        await conn.executemany(
            "UPDATE readings SET value = ?3 WHERE sensor_id = ?1 AND recorded_at = ?2 AND value != ?3", chunk
        )
        counts.added += added
        counts.updated += conn.total_changes - before
        counts.skipped += len(chunk) - added - (conn.total_changes - before)
        progress(len(chunk))
    await conn.executemany(
        """
        UPDATE sensors SET
            latest_at = (SELECT recorded_at FROM readings r WHERE r.sensor_id = sensors.sensor_id
                         ORDER BY recorded_at DESC LIMIT 1),
            latest_value = (SELECT value FROM readings r WHERE r.sensor_id = sensors.sensor_id
                            ORDER BY recorded_at DESC LIMIT 1)
        WHERE sensor_id = ?1
          AND EXISTS (SELECT 1 FROM readings r WHERE r.sensor_id = ?1)
          AND (latest_at IS NULL
               OR latest_at <= (SELECT MAX(recorded_at) FROM readings r WHERE r.sensor_id = ?1))
        """,
        [(sensor_id,) for sensor_id in sorted(set(sensors.values()))],
    )
    return counts


async def _write_alarms(conn: aiosqlite.Connection, records: list[Record], progress: Progress) -> Counts:
    columns = "alarm_id, pump_id, sensor_type, severity, message, value, raised_at, active, cleared_at"
    return await _upsert(
        conn,
        records,
        progress,
        f"SELECT {columns} FROM alarms WHERE alarm_id = ?",
        f"INSERT INTO alarms ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "UPDATE alarms SET pump_id = ?, sensor_type = ?, severity = ?, message = ?, value = ?, raised_at = ?, "
        "active = ?, cleared_at = ? WHERE alarm_id = ?",
    )


async def _write_maintenance(conn: aiosqlite.Connection, records: list[Record], progress: Progress) -> Counts:
    """Maintenance records matched on pump, date, kind and description (a new technician updates one).

    Then each pump's ``last_maintenance_on`` follows its newest record.
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
        progress(len(chunk))
    await conn.executemany(
        "UPDATE pumps SET last_maintenance_on = (SELECT MAX(performed_on) FROM maintenance_records m "
        "WHERE m.pump_id = ?1) WHERE pump_id = ?1 AND (last_maintenance_on IS NULL OR last_maintenance_on < "
        "(SELECT MAX(performed_on) FROM maintenance_records m WHERE m.pump_id = ?1))",
        [(pump_id,) for pump_id in sorted({r[0] for r in records})],
    )
    return counts


async def _write_work_orders(conn: aiosqlite.Connection, records: list[Record], progress: Progress) -> Counts:
    """Work orders of the site's CMMS, matched on their id; an imported one has no approval (``approval_id`` NULL).

    Importing them is an administrator's import of what the site already did, not an agent write: it goes through
    no approval (docs/plant-import.md). An id the registry already holds is updated to the file's fields; its
    approval, if it had one, is kept.
    """
    columns = "work_order_id, pump_id, priority, summary, status, created_at, requested_by, approved_by"
    return await _upsert(
        conn,
        records,
        progress,
        f"SELECT {columns} FROM work_orders WHERE work_order_id = ?",
        f"INSERT INTO work_orders ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        "UPDATE work_orders SET pump_id = ?, priority = ?, summary = ?, status = ?, created_at = ?, requested_by = ?, "
        "approved_by = ? WHERE work_order_id = ?",
    )
