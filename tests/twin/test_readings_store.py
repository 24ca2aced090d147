"""Batched writing of live readings: one transaction per batch, duplicates and unknown sensors counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage import Database
from twin.models import SensorType
from twin.readings import Reading, ReadingStore
from twin.sensors import SensorService

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)  # after every sample reading, so live values are the newest


def reading(seconds: float, value: float, pump: str = "PUMP-001", sensor: SensorType = SensorType.VIBRATION) -> Reading:
    return Reading(pump, sensor, value, T0 + timedelta(seconds=seconds), "test")


async def history(db: Database, sensor_id: str) -> list[tuple[str, float]]:
    rows = await db.fetch_all(
        "SELECT recorded_at, value FROM readings WHERE sensor_id = ? AND recorded_at >= ? ORDER BY recorded_at",
        (sensor_id, "2030-01-01T00:00:00Z"),
    )
    return [(row["recorded_at"], row["value"]) for row in rows]


async def test_a_batch_is_stored_in_time_order_and_moves_the_latest_value(db: Database) -> None:
    store = ReadingStore(db)
    batch = await store.store([reading(2, 2.5), reading(0, 2.2), reading(1, 2.4, sensor=SensorType.FLOW)])
    assert [(r.at, r.value) for r in batch.inserted] == [
        (T0, 2.2),
        (T0 + timedelta(seconds=1), 2.4),
        (T0 + timedelta(seconds=2), 2.5),
    ]
    assert (batch.duplicates, batch.unknown) == (0, 0)
    assert await history(db, "PUMP-001-vibration") == [("2030-01-01T12:00:00Z", 2.2), ("2030-01-01T12:00:02Z", 2.5)]
    latest = await SensorService(db).latest_readings(SensorType.VIBRATION, pump_id="PUMP-001")
    assert (latest.readings[0].value, latest.readings[0].recorded_at) == (2.5, "2030-01-01T12:00:02Z")


async def test_duplicates_are_dropped_and_counted_keeping_the_first_value(db: Database) -> None:
    store = ReadingStore(db)
    await store.store([reading(0, 2.2)])
    batch = await store.store([reading(0, 9.9), reading(1, 2.3), reading(1.5, 7.7)])
    assert [r.value for r in batch.inserted] == [2.3]
    assert batch.duplicates == 2
    assert await history(db, "PUMP-001-vibration") == [("2030-01-01T12:00:00Z", 2.2), ("2030-01-01T12:00:01Z", 2.3)]
    row = await db.fetch_one("SELECT latest_value, latest_at FROM sensors WHERE sensor_id = 'PUMP-001-vibration'")
    assert row is not None and (row["latest_value"], row["latest_at"]) == (2.3, "2030-01-01T12:00:01Z")


async def test_a_late_reading_is_stored_but_never_moves_the_latest_value_back(db: Database) -> None:
    store = ReadingStore(db)
    await store.store([reading(10, 3.0)])
    batch = await store.store([reading(5, 8.0)])
    assert [r.value for r in batch.inserted] == [8.0]
    assert await history(db, "PUMP-001-vibration") == [("2030-01-01T12:00:05Z", 8.0), ("2030-01-01T12:00:10Z", 3.0)]
    row = await db.fetch_one("SELECT latest_value, latest_at FROM sensors WHERE sensor_id = 'PUMP-001-vibration'")
    assert row is not None and (row["latest_value"], row["latest_at"]) == (3.0, "2030-01-01T12:00:10Z")


async def test_a_reading_older_than_the_imported_latest_keeps_the_imported_latest(db: Database) -> None:
    before = await db.fetch_one("SELECT latest_value, latest_at FROM sensors WHERE sensor_id = 'PUMP-002-flow'")
    old = Reading("PUMP-002", SensorType.FLOW, 1.0, datetime(2001, 1, 1, tzinfo=UTC), "test")
    batch = await ReadingStore(db).store([old])
    assert len(batch.inserted) == 1
    after = await db.fetch_one("SELECT latest_value, latest_at FROM sensors WHERE sensor_id = 'PUMP-002-flow'")
    assert before is not None and after is not None and tuple(after) == tuple(before)


async def test_readings_of_unknown_pumps_are_counted_not_written(db: Database) -> None:
    batch = await ReadingStore(db).store([reading(0, 1.0, pump="PUMP-999"), reading(0, 2.0)])
    assert (len(batch.inserted), batch.unknown, batch.duplicates) == (1, 1, 0)
    row = await db.fetch_one("SELECT COUNT(*) AS n FROM readings WHERE sensor_id LIKE 'PUMP-999%'")
    assert row is not None and row["n"] == 0


async def test_a_sensor_added_while_running_is_found_on_the_next_batch(db: Database) -> None:
    store = ReadingStore(db)
    assert (await store.store([reading(0, 1.0)])).unknown == 0  # the cache is filled now
    async with db.transaction() as conn:
        await conn.execute(
            "INSERT INTO pumps (pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, "
            "foundation, status, installed_on) VALUES ('PUMP-042', 'New', 'Station-Z', 'm', 10, 1480, 2, 'rigid', "
            "'online', '2030-01-01')"
        )
        await conn.execute(
            "INSERT INTO sensors (sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold) "
            "VALUES ('PUMP-042-vibration', 'PUMP-042', 'vibration', 'mm/s', 'high', 4.5)"
        )
    batch = await store.store([reading(1, 1.5, pump="PUMP-042")])
    assert (len(batch.inserted), batch.unknown) == (1, 0)


async def test_a_large_batch_spanning_several_statements_is_stored_whole(db: Database) -> None:
    readings = [reading(k, float(k % 7)) for k in range(1000)]
    batch = await ReadingStore(db).store(readings + readings[:10])
    assert (len(batch.inserted), batch.duplicates) == (1000, 10)
    assert len(await history(db, "PUMP-001-vibration")) == 1000


async def test_an_empty_batch_writes_nothing(db: Database) -> None:
    batch = await ReadingStore(db).store([])
    assert (batch.inserted, batch.duplicates, batch.unknown) == ([], 0, 0)
