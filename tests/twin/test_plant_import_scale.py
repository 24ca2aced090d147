"""A 1-million-row readings file imports whole through the streaming path, into each backend (`db`: SQLite and
PostgreSQL); its speed is bench/import_bench.py's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage import Database
from twin.importing import import_plant

ROWS = 1_000_000
START = datetime(2027, 1, 1, tzinfo=UTC)


def _write_readings(path: Path, sensors: list[tuple[str, str, str]], rows: int) -> str:
    """``rows`` readings, one per sensor per minute from START; returns the last minute's stamp (UTC)."""
    stamp = ""
    with path.open("w", encoding="utf-8") as out:
        out.write("pump_id,sensor_type,recorded_at,value,unit\n")
        step = 0
        while rows > 0:
            stamp = (START + timedelta(minutes=step)).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.writelines(f"{p},{k},{stamp},{step % 997 / 10:.1f},{u}\n" for p, k, u in sensors[:rows])
            rows -= len(sensors)
            step += 1
    return stamp


async def test_a_1_million_row_readings_file_imports_whole_and_latest_values_follow(
    db: Database, tmp_path: Path
) -> None:
    sensors = [
        (r["pump_id"], r["sensor_type"], r["unit"])
        for r in await db.fetch_all("SELECT pump_id, sensor_type, unit FROM sensors ORDER BY sensor_id")
    ]
    plant = tmp_path / "plant"
    plant.mkdir()
    last = _write_readings(plant / "readings.csv", sensors, ROWS)
    before = await db.fetch_one("SELECT COUNT(*) AS n FROM readings")
    assert before is not None

    report = await import_plant(db, plant)

    [readings] = report.files
    assert readings.imported and (readings.read, readings.added, readings.rejected) == (ROWS, ROWS, 0)
    after = await db.fetch_one("SELECT COUNT(*) AS n FROM readings")
    assert after is not None and after["n"] - before["n"] == ROWS
    # The file ends on a full minute of every sensor: each sensor's latest is that minute's value.
    steps = (ROWS + len(sensors) - 1) // len(sensors)
    latest = {tuple(r) for r in await db.fetch_all("SELECT latest_at, latest_value FROM sensors")}
    assert ROWS % len(sensors) == 0 and latest == {(last, (steps - 1) % 997 / 10)}


async def test_a_bad_row_after_chunks_were_written_leaves_nothing_of_the_file(db: Database, tmp_path: Path) -> None:
    sensors = [
        (r["pump_id"], r["sensor_type"], r["unit"])
        for r in await db.fetch_all("SELECT pump_id, sensor_type, unit FROM sensors ORDER BY sensor_id")
    ]
    plant = tmp_path / "plant"
    plant.mkdir()
    path = plant / "readings.csv"
    _write_readings(path, sensors, 50_000)  # five chunks of 10,000
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    pump, kind, moment, _value, unit = lines[35_001].split(",")
    lines[35_001] = f"{pump},{kind},{moment},five,{unit}"  # line 35,002: not a number
    lines[42_001] = lines[2]  # line 42,002 repeats line 3
    path.write_text("".join(lines), encoding="utf-8")
    before = await db.fetch_all("SELECT * FROM readings ORDER BY 1, 2")

    report = await import_plant(db, plant)

    [readings] = report.files
    assert not readings.imported and (readings.read, readings.rejected, readings.added) == (50_000, 2, 0)
    assert [p.line for p in readings.problems] == [35_002, 42_002]
    assert "the same record as line 3" in readings.problems[1].reason
    assert [tuple(r) for r in await db.fetch_all("SELECT * FROM readings ORDER BY 1, 2")] == [tuple(r) for r in before]

    skipped = await import_plant(db, plant, skip_bad=True)

    assert (skipped.files[0].imported, skipped.files[0].added, skipped.files[0].rejected) == (True, 49_998, 2)
