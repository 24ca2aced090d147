"""The sample fleet matches the domain reference, and its ISO zones agree with its alarms."""

from storage import Database
from twin import AssetService
from twin.iso10816 import Zone
from twin.sample_fleet import load_sample_fleet
from twin.sample_fleet_data import SAMPLE_PUMPS


async def test_pump_007_is_zone_d_with_a_critical_vibration_alarm(db: Database) -> None:
    details = await AssetService(db).pump_details("PUMP-007")
    assert details.vibration_zone is not None
    assert details.vibration_zone.zone is Zone.D
    assert details.vibration_zone.value_mm_s == 9.4
    assert details.machine_group == 1 and details.foundation.value == "rigid"
    assert details.last_maintenance_on == "2025-08-22"
    vibration_alarms = [a for a in details.active_alarms if a.sensor_type == "vibration"]
    assert [a.severity.value for a in vibration_alarms] == ["critical"]


async def test_pump_004_is_zone_c_with_an_elevated_not_critical_alarm(db: Database) -> None:
    details = await AssetService(db).pump_details("PUMP-004")
    assert details.vibration_zone is not None
    assert details.vibration_zone.zone is Zone.C
    assert details.vibration_zone.value_mm_s == 7.8
    assert details.foundation.value == "flexible"
    assert details.installed_on == "2023-01-20"
    severities = {a.severity.value for a in details.active_alarms if a.sensor_type == "vibration"}
    assert severities == {"high"}


async def test_every_pump_zone_agrees_with_its_vibration_alarms(db: Database) -> None:
    service = AssetService(db)
    zones = {}
    for spec in SAMPLE_PUMPS:
        details = await service.pump_details(spec.pump_id)
        assert details.vibration_zone is not None
        zone = details.vibration_zone.zone
        zones[spec.pump_id] = zone
        vib = {a.severity.value for a in details.active_alarms if a.sensor_type == "vibration"}
        expected = {Zone.A: set(), Zone.B: set(), Zone.C: {"high"}, Zone.D: {"critical"}}[zone]
        assert vib == expected, spec.pump_id
    others = [z for p, z in zones.items() if p not in {"PUMP-004", "PUMP-007"}]
    assert all(z in (Zone.A, Zone.B) for z in others)


async def test_loading_twice_loads_nothing_more(db: Database) -> None:
    before = await db.fetch_one("SELECT (SELECT COUNT(*) FROM readings) AS r, (SELECT COUNT(*) FROM alarms) AS a")
    assert await load_sample_fleet(db) is False
    after = await db.fetch_one("SELECT (SELECT COUNT(*) FROM readings) AS r, (SELECT COUNT(*) FROM alarms) AS a")
    assert before is not None and after is not None
    assert tuple(before) == tuple(after)


async def test_fleet_has_eight_pumps_across_four_stations_with_five_sensors_each(db: Database) -> None:
    pumps = await db.fetch_all("SELECT pump_id, location FROM pumps ORDER BY pump_id")
    assert [p["pump_id"] for p in pumps] == [f"PUMP-00{i}" for i in range(1, 9)]
    assert {p["location"] for p in pumps} == {"Station-A", "Station-B", "Station-C", "Station-D"}
    sensors = await db.fetch_one("SELECT COUNT(*) AS n FROM sensors")
    assert sensors is not None and sensors["n"] == 40
