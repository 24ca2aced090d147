from storage import Database
from twin import AssetService
from twin.generator import generate_fleet
from twin.iso10816 import Zone


async def test_generated_fleet_has_the_requested_size_and_alarms_agree_with_zones(db: Database) -> None:
    progressed: list[int] = []
    report = await generate_fleet(db, 60, 12, seed=3, progress=progressed.append)
    assert report.pumps == 60 and report.readings == 60 * 5 * 12
    assert sum(progressed) == 60
    assert report.first_pump_id == "PUMP-009" and report.last_pump_id == "PUMP-068"
    counts = await db.fetch_one(
        "SELECT (SELECT COUNT(*) FROM pumps) AS p, (SELECT COUNT(*) FROM readings WHERE sensor_id LIKE 'PUMP-0%') AS r"
    )
    assert counts is not None and counts["p"] == 68
    service = AssetService(db)
    for number in range(9, 69):
        details = await service.pump_details(f"PUMP-{number:03d}")
        assert details.vibration_zone is not None
        vib = {a.severity.value for a in details.active_alarms if a.sensor_type == "vibration"}
        expected = {Zone.A: set(), Zone.B: set(), Zone.C: {"high"}, Zone.D: {"critical"}}[details.vibration_zone.zone]
        assert vib == expected


async def test_generation_continues_numbering_after_existing_pumps(db: Database) -> None:
    await generate_fleet(db, 3, 4, seed=1)
    second = await generate_fleet(db, 2, 4, seed=2)
    assert second.first_pump_id == "PUMP-012"
