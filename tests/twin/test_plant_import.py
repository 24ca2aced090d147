"""Importing a plant from files: the shipped example, re-imports, bad rows, units, time zones, dry runs, formats."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage import Database, open_database
from twin.assets import AssetService
from twin.importing import PlantImportError, RecordKind, import_plant, site_zone
from twin.models import SensorType
from twin.sensors import SensorService

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plant"
TABLES = ("pumps", "sensors", "readings", "alarms", "maintenance_records", "work_orders")


@pytest.fixture
async def empty_db(database_target: str | Path) -> AsyncIterator[Database]:
    """An empty registry, on SQLite and on PostgreSQL."""
    database = await open_database(database_target)
    yield database
    await database.close()


@pytest.fixture
def plant(tmp_path: Path) -> Path:
    """A copy of the example plant that a test may change."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "plant"))


async def _contents(db: Database) -> dict[str, list[tuple[object, ...]]]:
    return {
        table: [tuple(row) for row in await db.fetch_all(f"SELECT * FROM {table} ORDER BY 1, 2")] for table in TABLES
    }


def _rewrite_csv(path: Path, line: int, column: str, value: str) -> None:
    """Set ``column`` of the row on file line ``line`` (the header is line 1)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows[line - 2][column] = value
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _as_jsonl(folder: Path) -> None:
    """Turn every CSV file of ``folder`` into JSON Lines, numbers as JSON numbers, empty fields left out."""
    for path in folder.glob("*.csv"):
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
        lines = []
        for row in rows:
            record: dict[str, object] = {}
            for key, value in row.items():
                if value == "":
                    continue
                try:
                    record[key] = float(value) if key in ("value", "power_kw", "alarm_threshold") else value
                except ValueError:
                    record[key] = value
            lines.append(json.dumps(record, ensure_ascii=False))
        path.with_suffix(".jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.unlink()


async def test_the_example_plant_imports_and_the_tools_answer_from_it(empty_db: Database) -> None:
    report = await import_plant(empty_db, EXAMPLE)

    assert report.complete
    added = {r.kind: r.added for r in report.files}
    assert added == {
        RecordKind.PUMPS: 3,
        RecordKind.SENSORS: 15,
        RecordKind.READINGS: 60,
        RecordKind.ALARMS: 3,
        RecordKind.MAINTENANCE: 3,
        RecordKind.WORK_ORDERS: 3,
    }
    details = await AssetService(empty_db).pump_details("pump 102")
    vibration = next(r for r in details.latest_readings if r.sensor_type is SensorType.VIBRATION)
    # The historian's last reading, 08:00 at +01:00, is the sensor's latest, stored in UTC.
    assert (vibration.value, vibration.recorded_at, vibration.beyond_threshold) == (5.6, "2026-12-03T07:00:00Z", True)
    assert details.vibration_zone is not None and details.vibration_zone.zone.value == "C"
    assert details.last_maintenance_on == "2026-02-03"
    assert [a.alarm_id for a in details.active_alarms] == ["ALM-0101"]
    trend = await SensorService(empty_db).trend("PUMP-102", SensorType.VIBRATION, days=7)
    assert trend.readings == 4 and trend.slope_per_day is not None and trend.slope_per_day > 0
    cleared = await empty_db.fetch_one("SELECT active, cleared_at FROM alarms WHERE alarm_id = 'ALM-0103'")
    assert cleared is not None and tuple(cleared) == (0, "2026-11-28T13:14:00Z")


async def test_importing_the_same_files_again_changes_nothing(empty_db: Database) -> None:
    await import_plant(empty_db, EXAMPLE)
    before = await _contents(empty_db)

    again = await import_plant(empty_db, EXAMPLE)

    assert await _contents(empty_db) == before
    assert len(again.files) == len(RecordKind)
    assert all(r.added == 0 and r.updated == 0 and r.skipped == r.read for r in again.files)


async def test_a_changed_reading_is_updated_and_the_sensor_latest_follows_it(empty_db: Database, plant: Path) -> None:
    await import_plant(empty_db, plant)
    _rewrite_csv(plant / "readings.csv", 25, "value", "6.4")  # PUMP-102 vibration, the last stamp

    report = await import_plant(empty_db, plant)

    readings = next(r for r in report.files if r.kind is RecordKind.READINGS)
    assert (readings.added, readings.updated, readings.skipped) == (0, 1, 59)
    sensor = await empty_db.fetch_one("SELECT latest_value FROM sensors WHERE sensor_id = 'PUMP-102-vibration'")
    assert sensor is not None and sensor["latest_value"] == 6.4


async def test_an_older_reading_imported_later_leaves_the_latest_alone(empty_db: Database, tmp_path: Path) -> None:
    await import_plant(empty_db, EXAMPLE)
    late = tmp_path / "late"
    late.mkdir()
    (late / "readings.csv").write_text(
        "pump_id,sensor_type,recorded_at,value,unit\nPUMP-102,vibration,2026-01-01T00:00:00Z,1.0,mm/s\n"
    )

    await import_plant(empty_db, late)

    sensor = await empty_db.fetch_one(
        "SELECT latest_value, latest_at FROM sensors WHERE sensor_id = 'PUMP-102-vibration'"
    )
    assert sensor is not None and tuple(sensor) == (5.6, "2026-12-03T07:00:00Z")


async def test_a_bad_row_refuses_its_whole_file_naming_line_and_reason(empty_db: Database, plant: Path) -> None:
    _rewrite_csv(plant / "pumps.csv", 3, "machine_group", "3")

    report = await import_plant(empty_db, plant)

    assert not report.complete
    [pumps] = report.files  # the files after it refer to its pumps and are not read
    assert not pumps.imported and (pumps.read, pumps.rejected, pumps.added) == (3, 1, 0)
    [problem] = pumps.problems
    assert problem.line == 3 and "machine_group must be 1 or 2" in problem.reason
    assert await _contents(empty_db) == {table: [] for table in TABLES}


async def test_skip_bad_imports_the_good_rows_and_reports_the_rest(empty_db: Database, plant: Path) -> None:
    _rewrite_csv(plant / "pumps.csv", 3, "pump_id", "XYZ-9")

    report = await import_plant(empty_db, plant, skip_bad=True)

    pumps = report.files[0]
    assert pumps.imported and (pumps.added, pumps.rejected) == (2, 1)
    assert pumps.problems[0].line == 3 and "PUMP- and 3 to 6 digits" in pumps.problems[0].reason
    # The sensors, readings and alarms of the refused pump are refused in turn, each naming the missing pump.
    sensors = report.files[1]
    assert sensors.rejected == 5 and "pump PUMP-102 is not in the registry" in sensors.problems[0].reason
    assert report.complete
    ids = [row["pump_id"] for row in await empty_db.fetch_all("SELECT pump_id FROM pumps ORDER BY pump_id")]
    assert ids == ["PUMP-101", "PUMP-103"]


async def test_pump_id_spellings_become_canonical_and_other_shapes_are_refused(empty_db: Database, plant: Path) -> None:
    _rewrite_csv(plant / "pumps.csv", 4, "pump_id", "PUMP-1234567")

    report = await import_plant(empty_db, plant)

    [problem] = report.files[0].problems
    assert problem.line == 4 and "'PUMP-1234567' is not a pump id" in problem.reason and "PUMP-007" in problem.reason
    await import_plant(empty_db, EXAMPLE)  # 'pump 102' and 'P-103' in the example
    ids = [row["pump_id"] for row in await empty_db.fetch_all("SELECT pump_id FROM pumps ORDER BY pump_id")]
    assert ids == ["PUMP-101", "PUMP-102", "PUMP-103"]


async def test_an_unknown_unit_is_refused_naming_the_known_ones(empty_db: Database, plant: Path) -> None:
    _rewrite_csv(plant / "sensors.csv", 5, "unit", "psi")  # PUMP-101 discharge_pressure

    report = await import_plant(empty_db, plant)

    sensors = report.files[1]
    assert not sensors.imported
    [problem] = sensors.problems
    assert problem.line == 5 and "unknown unit 'psi' for discharge_pressure" in problem.reason
    assert all(unit in problem.reason for unit in ("mm/s", "°C", "m³/h", "bar", "A (motor_current)"))
    assert await empty_db.fetch_all("SELECT * FROM sensors") == []


async def test_a_timestamp_without_offset_is_refused_unless_a_site_zone_is_given(
    empty_db: Database, plant: Path
) -> None:
    _rewrite_csv(plant / "readings.csv", 2, "recorded_at", "2026-11-30T08:00:00")

    refused = await import_plant(empty_db, plant)

    [problem] = next(r for r in refused.files if r.kind is RecordKind.READINGS).problems
    assert problem.line == 2 and "has no UTC offset" in problem.reason and "--time-zone" in problem.reason
    assert await empty_db.fetch_all("SELECT * FROM readings") == []

    accepted = await import_plant(empty_db, plant, zone=site_zone("America/New_York"))

    assert accepted.complete
    first = await empty_db.fetch_one(
        "SELECT MIN(recorded_at) AS at FROM readings WHERE sensor_id = 'PUMP-101-vibration'"
    )
    assert first is not None and first["at"] == "2026-11-30T13:00:00Z"  # 08:00 in New York, EST (UTC-5)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(PlantImportError, match="Unknown time zone 'Mars/Olympus'"):
        site_zone("Mars/Olympus")


async def test_a_dry_run_counts_everything_and_writes_nothing(empty_db: Database) -> None:
    report = await import_plant(empty_db, EXAMPLE, dry_run=True)

    assert report.dry_run and report.complete
    assert sum(r.added for r in report.files) == 87  # readings found their sensors, added in the same dry run
    assert await _contents(empty_db) == {table: [] for table in TABLES}


async def test_json_lines_import_the_same_as_csv(empty_db: Database, plant: Path, tmp_path: Path) -> None:
    _as_jsonl(plant)

    report = await import_plant(empty_db, plant)

    assert report.complete and report.files[2].file.endswith("readings.jsonl")
    csv_db = await open_database(tmp_path / "csv.db")
    try:
        await import_plant(csv_db, EXAMPLE)
        assert await _contents(empty_db) == await _contents(csv_db)
    finally:
        await csv_db.close()


async def test_a_json_lines_line_that_is_not_an_object_is_a_bad_row(empty_db: Database, plant: Path) -> None:
    _as_jsonl(plant)
    path = plant / "pumps.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], "{not json", "", lines[1], '{"pump_id": "PUMP-104", "colour": "red"}']))

    report = await import_plant(empty_db, plant, skip_bad=True)

    problems = [(p.line, p.reason) for p in report.files[0].problems]
    assert problems[0][0] == 2 and problems[0][1].startswith("not JSON")
    assert problems[1][0] == 5 and "unknown field(s) 'colour'" in problems[1][1]
    assert report.files[0].added == 2


async def test_a_csv_header_with_an_unknown_column_refuses_the_file(empty_db: Database, plant: Path) -> None:
    path = plant / "pumps.csv"
    path.write_text(path.read_text(encoding="utf-8").replace("location", "statoin", 1), encoding="utf-8")

    with pytest.raises(PlantImportError, match=r"pumps.csv:1: unknown column\(s\) 'statoin'"):
        await import_plant(empty_db, plant)


async def test_a_folder_without_plant_files_is_refused(empty_db: Database, tmp_path: Path) -> None:
    with pytest.raises(PlantImportError, match="No plant files"):
        await import_plant(empty_db, tmp_path)


async def test_a_changed_pump_is_updated_and_blank_lines_keep_line_numbers(empty_db: Database, plant: Path) -> None:
    await import_plant(empty_db, EXAMPLE)
    lines = (plant / "pumps.csv").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace(",online,", ",offline,")
    lines[3] = lines[3].replace("maintenance", "broken")
    (plant / "pumps.csv").write_text("\n".join([*lines[:3], "", *lines[3:]]) + "\n", encoding="utf-8")

    report = await import_plant(empty_db, plant, skip_bad=True)

    pumps = report.files[0]
    assert (pumps.added, pumps.updated, pumps.skipped, pumps.rejected) == (0, 1, 1, 1)
    assert pumps.problems[0].line == 5 and "status 'broken' is not one of online" in pumps.problems[0].reason
    row = await empty_db.fetch_one("SELECT status FROM pumps WHERE pump_id = 'PUMP-101'")
    assert row is not None and row["status"] == "offline"


async def test_work_orders_import_as_the_sites_records_without_approvals(empty_db: Database, plant: Path) -> None:
    report = await import_plant(empty_db, plant)

    assert report.complete
    rows = await empty_db.fetch_all(
        "SELECT work_order_id, pump_id, priority, status, created_at, approved_by, approval_id FROM work_orders "
        "ORDER BY work_order_id"
    )
    # "WO 902" and "pump 102" are made canonical; created_at is stored in UTC; no approval is attached.
    assert [tuple(r) for r in rows] == [
        ("WO-0901", "PUMP-101", "low", "closed", "2026-06-13T08:30:00Z", "M. Okafor", None),
        ("WO-0902", "PUMP-102", "high", "in_progress", "2026-12-03T07:20:00Z", "M. Okafor", None),
        ("WO-0903", "PUMP-103", "urgent", "open", "2026-12-03T06:45:00Z", None, None),
    ]
    assert await empty_db.fetch_all("SELECT * FROM approvals") == []


async def test_a_bad_work_order_row_is_reported_with_file_line_and_reason(empty_db: Database, plant: Path) -> None:
    _rewrite_csv(plant / "work_orders.csv", 3, "priority", "asap")
    _rewrite_csv(plant / "work_orders.csv", 4, "work_order_id", "JOB-7")

    report = await import_plant(empty_db, plant)

    work_orders = report.files[-1]
    assert work_orders.kind is RecordKind.WORK_ORDERS and not work_orders.imported
    assert work_orders.file.endswith("work_orders.csv")
    assert [(p.line, p.reason.split(" is not ")[0]) for p in work_orders.problems] == [
        (3, "priority 'asap'"),
        (4, "work_order_id 'JOB-7'"),
    ]
    assert "low, medium, high, urgent" in work_orders.problems[0].reason
    assert await empty_db.fetch_all("SELECT * FROM work_orders") == []
