"""The batcher: writes when a batch is full (in the background, taking all held), when its oldest reading waited
long enough, and on close."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest

from storage import Database
from telemetry.batching import MAX_HELD_BATCHES, Batcher
from twin.alarm_rules import AlarmRules
from twin.alarms import AlarmService
from twin.models import SensorType
from twin.readings import Reading, ReadingStore, StoredBatch

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
WAIT_S = 10  # bound on waiting for a background flush; it comes after flush_seconds (0.05 s)


def at(seconds: float, value: float = 2.0, pump: str = "PUMP-001") -> Reading:
    return Reading(pump, SensorType.VIBRATION, value, T0 + timedelta(seconds=seconds), "test")


async def live_count(db: Database) -> int:
    row = await db.fetch_one("SELECT COUNT(*) AS n FROM readings WHERE recorded_at >= '2030'")
    return row["n"] if row is not None else -1


class Heard:
    """An ``on_stored`` that keeps every batch and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.batches: list[StoredBatch] = []
        self._arrived = asyncio.Event()

    async def __call__(self, batch: StoredBatch) -> None:
        self.batches.append(batch)
        self._arrived.set()

    async def next(self) -> None:
        await asyncio.wait_for(self._arrived.wait(), WAIT_S)
        self._arrived.clear()


async def test_a_full_batch_is_written_at_once(db: Database) -> None:
    heard = Heard()
    batcher = Batcher(ReadingStore(db), batch_size=3, flush_seconds=3600, on_stored=heard)
    for k in range(5):
        await batcher.put(at(k))
    await batcher.wait_idle()
    assert await live_count(db) == 3
    assert [len(b.inserted) for b in heard.batches] == [3]
    assert (batcher.stored, batcher.held) == (3, 2)


async def test_readings_arriving_while_a_write_is_in_flight_all_go_into_the_next_write(db: Database) -> None:
    heard = Heard()
    batcher = Batcher(ReadingStore(db), batch_size=2, flush_seconds=3600, on_stored=heard)
    for k in range(7):  # the first two start a write; the five after it arrive while it is in flight
        await batcher.put(at(k))
    await batcher.wait_idle()
    assert [len(b.inserted) for b in heard.batches] == [2, 5]
    assert (await live_count(db), batcher.writes, batcher.held) == (7, 2, 0)


async def test_a_source_waits_once_max_held_batches_are_held_and_goes_on_when_a_write_takes_them(db: Database) -> None:
    batcher = Batcher(ReadingStore(db), batch_size=2, flush_seconds=3600)

    bound = 2 * MAX_HELD_BATCHES
    total = bound + 10

    async def source() -> None:
        for k in range(total):
            await batcher.put(at(k))

    async with db.transaction():  # the database is busy: the first write (two readings) waits for it
        feeding = asyncio.create_task(source())
        for _ in range(1000):  # bounded: the source needs only a few turns of the loop to fill up
            if batcher.held >= bound:
                break
            await asyncio.sleep(0)
        for _ in range(10):  # more turns: a source that did not wait would go on filling
            await asyncio.sleep(0)
        assert (batcher.held, feeding.done()) == (bound, False)
    await asyncio.wait_for(feeding, WAIT_S)
    await batcher.close()
    assert await live_count(db) == total


async def test_a_batch_is_written_once_its_oldest_reading_waited_flush_seconds(db: Database) -> None:
    heard = Heard()
    batcher = Batcher(ReadingStore(db), batch_size=1000, flush_seconds=0.05, on_stored=heard)
    runner = asyncio.create_task(batcher.run())
    try:
        await batcher.put(at(0))
        await batcher.put(at(1))
        await heard.next()
        assert await live_count(db) == 2
        await batcher.put(at(2))
        await heard.next()
        assert await live_count(db) == 3
    finally:
        await batcher.close()
        await asyncio.wait_for(runner, WAIT_S)


async def test_close_writes_what_is_held_and_stops_run(db: Database) -> None:
    batcher = Batcher(ReadingStore(db), batch_size=1000, flush_seconds=3600, on_stored=None)
    runner = asyncio.create_task(batcher.run())
    await batcher.put(at(0))
    await batcher.put(at(0))  # a duplicate
    await batcher.put(at(1, pump="PUMP-999"))  # no such pump
    await batcher.close()
    await asyncio.wait_for(runner, WAIT_S)
    assert await live_count(db) == 1
    assert (batcher.stored, batcher.duplicates, batcher.unknown, batcher.held) == (1, 1, 1, 0)
    with pytest.raises(RuntimeError, match="closed"):
        await batcher.put(at(2))


async def refuse_readings(db: Database) -> None:
    async with db.transaction() as conn:
        if db.dialect.is_postgres:
            await conn.execute(
                "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$"
            )
            await conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON readings EXECUTE FUNCTION refuse()")
        else:
            await conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON readings BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
            )


async def accept_readings(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute("DROP TRIGGER refuse ON readings" if db.dialect.is_postgres else "DROP TRIGGER refuse")


async def test_a_failed_batch_is_logged_and_written_at_the_next_flush(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    batcher = Batcher(ReadingStore(db), batch_size=2, flush_seconds=3600)
    await refuse_readings(db)
    with caplog.at_level(logging.ERROR, logger="telemetry.batching"):
        await batcher.put(at(0))
        await batcher.put(at(1))
        await batcher.wait_idle()
    assert "could not write 2 readings; trying once more" in caplog.text
    assert (await live_count(db), batcher.held) == (0, 2)
    await accept_readings(db)
    await batcher.put(at(2))
    await batcher.close()
    assert (await live_count(db), batcher.stored, batcher.held) == (3, 3, 0)


async def test_a_batch_failing_twice_is_dropped_with_an_error_naming_the_loss(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    batcher = Batcher(ReadingStore(db), batch_size=2, flush_seconds=3600)
    await refuse_readings(db)
    with caplog.at_level(logging.ERROR, logger="telemetry.batching"):
        await batcher.put(at(0))
        await batcher.put(at(1))
        await batcher.flush()
    assert "dropped 2 readings" in caplog.text
    assert (await live_count(db), batcher.held) == (0, 0)


async def test_a_failing_listener_is_logged_and_writing_goes_on(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    async def broken(batch: StoredBatch) -> None:
        raise ValueError("listener bug")

    batcher = Batcher(ReadingStore(db), batch_size=1, flush_seconds=3600, on_stored=broken)
    with caplog.at_level(logging.ERROR, logger="telemetry.batching"):
        await batcher.put(at(0))
        await batcher.put(at(1))
        await batcher.wait_idle()
    assert caplog.text.count("handling 1 stored readings failed") == 2
    assert await live_count(db) == 2


async def test_stored_readings_raise_alarms_the_tools_list(db: Database) -> None:
    rules = AlarmRules(db, raise_after_seconds=0.2, clear_after_seconds=0.2, deadband_percent=5, levels={})
    await rules.start()
    raised: list[str] = []

    async def observe(batch: StoredBatch) -> None:
        raised.extend(await rules.observe(batch.inserted))

    batcher = Batcher(ReadingStore(db), batch_size=10, flush_seconds=3600, on_stored=observe)
    for k in range(3):
        await batcher.put(at(k, value=5.0))
    await batcher.close()
    listed = await AlarmService(db).list_alarms(pump_id="PUMP-001")
    assert [a.alarm_id for a in listed.alarms] == raised and len(raised) == 1


async def test_a_batch_size_below_one_is_refused_with_what_is_valid(db: Database) -> None:
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        Batcher(ReadingStore(db), batch_size=0, flush_seconds=1)
