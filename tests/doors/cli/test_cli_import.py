"""`pumpops db import` in a subprocess: the JSON summary, the audit row, bad rows on stderr, dry runs."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_setup.local_identity import os_user
from tests.cli_process import run_pumpops
from tests.postgres_server import database_section, query

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "plant"
COUNTS = ("read", "added", "updated", "skipped", "rejected")


def _settings(folder: Path, target: str | Path | None, **extra: object) -> Path:
    """Settings for the test's `database_target` (``None``: a plain SQLite file, for a test that never opens it)."""
    path = folder / "appsettings.json"
    database = database_section(target, "state/plant.db") if target is not None else {"Path": "state/plant.db"}
    path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, **extra}))
    return path


def _rows(settings: Path, sql: str) -> list[tuple[object, ...]]:
    return [tuple(row.values()) for row in query(settings, sql)]


def test_import_prints_a_json_summary_per_record_kind_and_records_one_audit_row(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = _settings(tmp_path, database_target, Identity={"AllowAssertedNames": True})

    result = run_pumpops(settings, "db", "import", str(EXAMPLE), "--json", "--as", "ops-admin")

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["dry_run"], summary["complete"]) == (False, True)
    assert list(summary["kinds"]) == ["pumps", "sensors", "readings", "alarms", "maintenance", "work_orders"]
    readings = summary["kinds"]["readings"]
    assert {key: readings[key] for key in COUNTS} == {
        "read": 60,
        "added": 60,
        "updated": 0,
        "skipped": 0,
        "rejected": 0,
    }
    assert readings["problems"] == [] and readings["file"].endswith("readings.csv")
    [(principal, door, effect, outcome, detail)] = _rows(
        settings, "SELECT principal, door, effect, outcome, detail FROM audit_log WHERE function = 'cli-import'"
    )
    assert (principal, door, effect, outcome) == (f"{os_user()} (asserted: ops-admin)", "cli", "write", "ok")
    assert json.loads(str(detail))["pumps"] == {"read": 3, "added": 3}
    assert json.loads(str(detail))["work_orders"]["added"] == 3
    # The tools answer from the imported plant through the kernel, every filter applying.
    called = run_pumpops(settings, "tools", "call", "assets.get_pump_details", "pump_id=P-102", "--json")
    assert called.returncode == 0, called.stderr
    details = json.loads(called.stdout)
    vibration = next(r for r in details["latest_readings"] if r["sensor_type"] == "vibration")
    assert (vibration["value"], vibration["recorded_at"]) == (5.6, "2026-12-03T07:00:00Z")
    assert details["vibration_zone"]["zone"] == "C"


def test_a_bad_row_is_reported_as_file_line_reason_and_exits_1_writing_nothing(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = _settings(tmp_path, database_target)
    plant = tmp_path / "plant"
    plant.mkdir()
    lines = (EXAMPLE / "pumps.csv").read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace("rigid", "concrete")
    (plant / "pumps.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run_pumpops(settings, "db", "import", str(plant))

    assert result.returncode == 1
    assert f"{plant / 'pumps.csv'}:3: foundation 'concrete' is not one of rigid, flexible" in result.stderr
    assert "NOT imported" in result.stdout and "Traceback" not in result.stderr
    assert _rows(settings, "SELECT COUNT(*) FROM pumps") == [(0,)]
    assert _rows(settings, "SELECT outcome FROM audit_log WHERE function = 'cli-import'") == [("error",)]


def test_a_dry_run_reports_what_it_would_add_and_writes_nothing(tmp_path: Path, database_target: str | Path) -> None:
    settings = _settings(tmp_path, database_target)

    result = run_pumpops(settings, "db", "import", str(EXAMPLE), "--dry-run", "--json")

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["dry_run"] is True and summary["kinds"]["pumps"]["added"] == 3
    assert _rows(settings, "SELECT COUNT(*) FROM pumps") == [(0,)]
    assert _rows(settings, "SELECT COUNT(*) FROM audit_log") == [(0,)]


def test_a_missing_folder_or_unknown_time_zone_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    """The zone is refused before the database is opened: no backend to run it on."""
    settings = _settings(tmp_path, None)

    result = run_pumpops(settings, "db", "import", str(EXAMPLE), "--time-zone", "Mars/Olympus")

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: Unknown time zone 'Mars/Olympus': give an IANA name such as 'Europe/Berlin' or 'UTC'."
    ]


def test_timestamps_without_an_offset_take_the_sites_zone_from_plant_time_zone(
    tmp_path: Path, database_target: str | Path
) -> None:
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "pumps.csv").write_text((EXAMPLE / "pumps.csv").read_text(encoding="utf-8"), encoding="utf-8")
    (plant / "sensors.csv").write_text((EXAMPLE / "sensors.csv").read_text(encoding="utf-8"), encoding="utf-8")
    sensor = (EXAMPLE / "sensors.csv").read_text(encoding="utf-8").splitlines()[1].split(",")
    readings = (
        "pump_id,sensor_type,recorded_at,value,unit\n"
        + f"{sensor[0]},{sensor[1]},2026-12-01T09:00:00,1.5,{sensor[2]}\n"
    )
    (plant / "readings.csv").write_text(readings, encoding="utf-8")

    refused = run_pumpops(_settings(tmp_path, database_target), "db", "import", str(plant))
    assert refused.returncode == 1 and "has no UTC offset" in refused.stderr

    settings = _settings(tmp_path, database_target, Plant={"TimeZone": "Europe/Berlin"})
    imported = run_pumpops(settings, "db", "import", str(plant), "--json")
    assert imported.returncode == 0, imported.stderr
    assert _rows(settings, "SELECT recorded_at FROM readings WHERE value = 1.5") == [("2026-12-01T08:00:00Z",)]
