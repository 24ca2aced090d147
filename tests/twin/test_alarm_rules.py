"""Alarms from telemetry: raised after a duration beyond the threshold, cleared past a deadband, severity by zone."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage import Database, open_database
from twin.alarm_rules import AlarmRules
from twin.alarms import AlarmService
from twin.models import SensorType, Severity
from twin.readings import Reading, ReadingStore
from twin.sample_fleet import load_sample_fleet

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
VIB = SensorType.VIBRATION
# Sample fleet: PUMP-001 is Group 1 on a rigid foundation, vibration threshold 4.5 mm/s (zone B/C), C/D at 7.1;
# bearing temperature alarms at 85 °C, flow (bad when low) at 1530 m³/h. It has no alarms of its own.


def at(seconds: float, value: float, pump: str = "PUMP-001", sensor: SensorType = VIB) -> Reading:
    return Reading(pump, sensor, value, T0 + timedelta(seconds=seconds), "test")


async def rules(
    db: Database,
    *,
    raise_after: float = 30,
    clear_after: float = 10,
    deadband: float = 5,
    levels: Mapping[str, Mapping[str, float]] | None = None,
) -> AlarmRules:
    engine = AlarmRules(
        db,
        raise_after_seconds=raise_after,
        clear_after_seconds=clear_after,
        deadband_percent=deadband,
        levels=levels or {},
    )
    await engine.start()
    return engine


async def feed(engine: AlarmRules, *readings: Reading) -> list[str]:
    """Observe readings one at a time, as batches of one; all the alarm ids raised."""
    raised: list[str] = []
    for reading in readings:
        raised += await engine.observe([reading])
    return raised


async def active_of(db: Database, pump: str = "PUMP-001", sensor: str = "vibration") -> list[dict[str, object]]:
    rows = await db.fetch_all(
        "SELECT * FROM alarms WHERE pump_id = ? AND sensor_type = ? AND active = 1", (pump, sensor)
    )
    return [dict(row) for row in rows]


async def test_an_alarm_is_raised_only_once_the_value_stayed_beyond_for_the_duration(db: Database) -> None:
    engine = await rules(db)
    assert await feed(engine, at(0, 5.0), at(10, 5.2), at(29, 5.1)) == []
    assert await active_of(db) == []
    raised = await engine.observe([at(30, 5.3)])
    assert raised == ["ALM-0008"]  # the sample fleet holds ALM-0001 … ALM-0007
    [alarm] = await active_of(db)
    assert alarm["raised_at"] == "2030-01-01T12:00:00Z"
    assert alarm["origin"] == "telemetry"
    assert (alarm["severity"], alarm["value"]) == ("high", 5.3)
    assert alarm["message"] == "vibration 5.3 mm/s beyond its alarm threshold 4.5 mm/s for 30 s (raised from telemetry)"


async def test_the_tools_see_an_alarm_raised_from_telemetry(db: Database) -> None:
    engine = await rules(db, raise_after=0)
    [alarm_id] = await engine.observe([at(0, 5.0)])
    listed = await AlarmService(db).list_alarms(pump_id="PUMP-001")
    assert [a.alarm_id for a in listed.alarms] == [alarm_id]
    assert listed.alarms[0].severity is Severity.HIGH


async def test_one_reading_beyond_raises_when_no_duration_is_required(db: Database) -> None:
    engine = await rules(db, raise_after=0)
    assert len(await engine.observe([at(0, 4.6)])) == 1


async def test_a_value_at_the_threshold_is_not_beyond(db: Database) -> None:
    engine = await rules(db, raise_after=0)
    assert await engine.observe([at(0, 4.5)]) == []


async def test_a_value_flapping_around_the_threshold_in_short_spans_never_raises(db: Database) -> None:
    engine = await rules(db, raise_after=30)
    flapping = [at(0, 4.8), at(20, 4.4), at(25, 4.9), at(45, 4.3), at(50, 4.7), at(70, 4.8), at(79, 4.9), at(80, 4.0)]
    assert await engine.observe(flapping) == []
    assert await active_of(db) == []


async def test_a_raised_alarm_stays_while_the_value_is_inside_the_deadband_and_clears_after_the_clear_time(
    db: Database,
) -> None:
    engine = await rules(db, raise_after=0, clear_after=10, deadband=5)  # inside means <= 4.5 - 0.225 = 4.275
    [alarm_id] = await engine.observe([at(0, 5.0)])
    assert await feed(engine, *(at(t, 4.4) for t in range(5, 100, 5))) == []
    assert [a["alarm_id"] for a in await active_of(db)] == [alarm_id]
    await feed(engine, at(100, 4.2), at(105, 4.25), at(109, 4.1))
    assert [a["alarm_id"] for a in await active_of(db)] == [alarm_id]  # inside only 9 s so far
    await engine.observe([at(110, 4.0)])
    assert await active_of(db) == []
    row = await db.fetch_one("SELECT active, cleared_at FROM alarms WHERE alarm_id = ?", (alarm_id,))
    assert row is not None and (row["active"], row["cleared_at"]) == (0, "2030-01-01T12:01:50Z")


async def test_coming_back_into_the_deadband_restarts_the_clear_time(db: Database) -> None:
    engine = await rules(db, raise_after=0, clear_after=10)
    await engine.observe([at(0, 5.0)])
    await feed(engine, at(100, 4.0), at(108, 4.4), at(110, 4.0), at(119, 4.0))
    assert len(await active_of(db)) == 1
    await engine.observe([at(120, 4.0)])
    assert await active_of(db) == []


async def test_after_clearing_a_new_excursion_raises_a_new_alarm(db: Database) -> None:
    engine = await rules(db, raise_after=0, clear_after=0)
    first = await engine.observe([at(0, 5.0), at(1, 4.0), at(2, 5.5)])
    assert first == ["ALM-0008", "ALM-0009"]
    assert [a["alarm_id"] for a in await active_of(db)] == ["ALM-0009"]


async def test_vibration_severity_follows_the_iso_zone_of_the_pumps_class(db: Database) -> None:
    engine = await rules(db, raise_after=0)
    # PUMP-008 is Group 2 on a flexible foundation: C/D at 7.1 mm/s, so 7.5 is zone D.
    await engine.observe([at(0, 5.0, pump="PUMP-001"), at(0, 7.5, pump="PUMP-008")])
    [first] = await active_of(db, "PUMP-001")
    [second] = await active_of(db, "PUMP-008")
    assert (first["severity"], second["severity"]) == ("high", "critical")


async def test_severity_escalates_while_raised_and_never_drops(db: Database) -> None:
    engine = await rules(db, raise_after=0)
    await feed(engine, at(0, 5.0), at(10, 8.0), at(20, 5.0))
    [alarm] = await active_of(db)
    assert (alarm["severity"], alarm["value"]) == ("critical", 8.0)
    assert str(alarm["message"]).startswith("vibration 8 mm/s beyond its alarm threshold 4.5 mm/s for 10 s")


async def test_other_sensors_take_the_highest_configured_level_reached(db: Database) -> None:
    levels = {"bearing_temperature": {"high": 90, "critical": 100}, "flow": {"high": 1400}}
    engine = await rules(db, raise_after=0, levels=levels)
    temp, flow = SensorType.BEARING_TEMPERATURE, SensorType.FLOW
    await engine.observe([at(0, 86.0, sensor=temp), at(0, 1500.0, sensor=flow)])
    assert [a["severity"] for a in await active_of(db, sensor="bearing_temperature")] == ["medium"]
    assert [a["severity"] for a in await active_of(db, sensor="flow")] == ["medium"]
    await engine.observe([at(5, 95.0, sensor=temp), at(5, 1390.0, sensor=flow)])
    assert [a["severity"] for a in await active_of(db, sensor="bearing_temperature")] == ["high"]
    assert [a["severity"] for a in await active_of(db, sensor="flow")] == ["high"]


async def test_an_alarm_at_its_sensors_highest_level_keeps_its_first_value_and_message(db: Database) -> None:
    # Levels top out at high for flow: once there, a worse value changes nothing (severity only escalates).
    engine = await rules(db, raise_after=0, levels={"flow": {"high": 1400}, "bearing_temperature": {"low": 80}})
    flow, temp = SensorType.FLOW, SensorType.BEARING_TEMPERATURE
    await feed(engine, at(0, 1500.0, sensor=flow), at(5, 1390.0, sensor=flow), at(10, 900.0, sensor=flow))
    [alarm] = await active_of(db, sensor="flow")
    assert (alarm["severity"], alarm["value"]) == ("high", 1390.0)
    assert str(alarm["message"]).startswith("flow 1390 m³/h beyond its alarm threshold 1530 m³/h for 5 s")
    # A level under medium: a value reaching it is low, and a worse one can still only reach medium.
    await feed(engine, at(0, 86.0, sensor=temp), at(5, 120.0, sensor=temp))
    assert [a["severity"] for a in await active_of(db, sensor="bearing_temperature")] == ["low"]


async def test_a_low_direction_sensor_clears_only_above_threshold_plus_deadband(db: Database) -> None:
    engine = await rules(db, raise_after=0, clear_after=0, deadband=5)  # 1530 + 76.5 = 1606.5
    flow = SensorType.FLOW
    await engine.observe([at(0, 1500.0, sensor=flow), at(1, 1600.0, sensor=flow)])
    assert len(await active_of(db, sensor="flow")) == 1
    await engine.observe([at(2, 1610.0, sensor=flow)])
    assert await active_of(db, sensor="flow") == []


async def test_a_restarted_engine_takes_up_its_alarm_instead_of_raising_twice(db: Database) -> None:
    first = await rules(db, raise_after=0, clear_after=0)
    [alarm_id] = await first.observe([at(0, 5.0)])
    second = await rules(db, raise_after=0, clear_after=0)
    assert await second.observe([at(10, 6.0), at(20, 8.0)]) == []
    [alarm] = await active_of(db)
    assert (alarm["alarm_id"], alarm["severity"]) == (alarm_id, "critical")
    await second.observe([at(30, 3.0)])
    assert await active_of(db) == []


async def test_a_sensor_with_an_imported_active_alarm_gets_no_second_alarm_and_keeps_it(db: Database) -> None:
    # ALM-0001 is the sample fleet's active critical vibration alarm on PUMP-007.
    engine = await rules(db, raise_after=0, clear_after=0)
    assert await engine.observe([at(0, 9.5, pump="PUMP-007"), at(60, 9.6, pump="PUMP-007")]) == []
    await engine.observe([at(120, 1.0, pump="PUMP-007")])
    assert [a["alarm_id"] for a in await active_of(db, "PUMP-007")] == ["ALM-0001"]


async def test_a_late_reading_does_not_rewind_a_sensor(db: Database) -> None:
    engine = await rules(db, raise_after=30)
    await feed(engine, at(0, 5.0), at(20, 5.0))
    assert await engine.observe([at(10, 4.0), at(30, 5.0)]) == ["ALM-0008"]


async def test_stored_batches_drive_the_rules_as_the_service_wires_them(db: Database) -> None:
    store = ReadingStore(db)
    engine = await rules(db, raise_after=0)
    batch = await store.store([at(0, 5.0), at(0, 5.0)])
    assert await engine.observe(batch.inserted) == ["ALM-0008"]


async def test_a_batch_of_many_sensors_leaves_the_same_alarms_as_its_readings_one_at_a_time(
    db: Database, tmp_path: Path
) -> None:
    temp, flow = SensorType.BEARING_TEMPERATURE, SensorType.FLOW
    script: list[Reading] = []
    for second in range(0, 200, 5):
        vibration = 1.0 if second < 30 else 5.0 if second < 110 else 7.5 if second < 120 else 1.0
        script += [
            at(second, vibration),  # inside, then beyond: raised, escalated to zone D, cleared past the deadband
            at(second, 2000.0, sensor=flow),  # inside throughout (bad when low)
            at(second, 90.0 if second < 150 else 80.0, sensor=temp),  # beyond from the start, then cleared
            at(second, 9.5, pump="PUMP-007"),  # beyond, but its imported alarm stands
            at(second, 7.5 if second >= 50 else 2.0, pump="PUMP-008"),
        ]
    script.insert(60, at(40, 9.9, pump="PUMP-008"))  # a late reading: ignored by both
    other = await open_database(tmp_path / "other.db")
    try:
        await load_sample_fleet(other)
        one_at_a_time = await feed(await rules(other), *script)
        batched = await rules(db)
        in_batches = [
            alarm for start in range(0, len(script), 70) for alarm in await batched.observe(script[start : start + 70])
        ]
        query = "SELECT * FROM alarms ORDER BY alarm_id"
        assert in_batches == one_at_a_time
        assert len(one_at_a_time) == 3
        assert [dict(row) for row in await db.fetch_all(query)] == [dict(row) for row in await other.fetch_all(query)]
    finally:
        await other.close()
