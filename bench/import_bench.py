"""Plant import bench: `pumpops db import` of a readings file versus a bare sqlite3 import of the same file.

Generates a long-format readings CSV of ``--rows`` rows (default 1,000,000) for the sample fleet's sensors, one
reading per sensor per minute. Then, each into a fresh copy of the same database (the sample fleet loaded):
- pumpops: `twin.importing.import_plant`, the code path of `pumpops db import` (every row checked, timestamps
  normalised to UTC, rows matched on their natural key, sensors' latest values following the newest reading);
- bare: ``csv.reader`` + one ``executemany`` INSERT into the same readings table, one transaction, the same
  PRAGMAs (WAL, synchronous=NORMAL, foreign keys on), no checks.
Prints rows/s of both and the ratio against the target (pumpops >= 0.5x bare). No assertions.

Run:   .venv/bin/python bench/import_bench.py
Smoke: .venv/bin/python bench/import_bench.py --rows 100000
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage import open_database
from twin.importing import import_plant
from twin.sample_fleet import load_sample_fleet

RATIO_TARGET = 0.5
START = datetime(2027, 1, 1, tzinfo=UTC)  # after the sample fleet's own history


def write_readings(path: Path, sensors: list[tuple[str, str, str]], rows: int) -> None:
    """``rows`` readings, one per sensor per minute from START, in the import's CSV columns."""
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("pump_id,sensor_type,recorded_at,value,unit\n")
        step = 0
        while rows > 0:
            stamp = (START + timedelta(minutes=step)).strftime("%Y-%m-%dT%H:%M:%SZ")
            lines = [f"{pump},{kind},{stamp},{(step % 997) / 10:.1f},{unit}\n" for pump, kind, unit in sensors]
            out.writelines(lines[:rows])
            rows -= len(lines)
            step += 1


async def prepare(folder: Path, rows: int) -> tuple[Path, Path]:
    """A database with the sample fleet and the readings file; returns their paths."""
    template = folder / "template.db"
    db = await open_database(template)
    try:
        await load_sample_fleet(db)
        sensors = [
            (r["pump_id"], r["sensor_type"], r["unit"])
            for r in await db.fetch_all("SELECT pump_id, sensor_type, unit FROM sensors ORDER BY sensor_id")
        ]
    finally:
        await db.close()
    plant = folder / "plant"
    plant.mkdir()
    write_readings(plant / "readings.csv", sensors, rows)
    return template, plant


def fresh_copy(template: Path, target: Path) -> Path:
    """A copy of the template database (its WAL checkpointed into the file first)."""
    with sqlite3.connect(template) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(template, target)
    return target


async def time_pumpops(path: Path, plant: Path) -> tuple[float, int]:
    db = await open_database(path)
    try:
        started = time.perf_counter()
        report = await import_plant(db, plant)
        elapsed = time.perf_counter() - started
    finally:
        await db.close()
    return elapsed, report.files[0].added


def time_bare(path: Path, plant: Path) -> tuple[float, int]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
            conn.execute(f"PRAGMA {pragma}")
        started = time.perf_counter()
        sensors = {(r[0], r[1]): r[2] for r in conn.execute("SELECT pump_id, sensor_type, sensor_id FROM sensors")}
        with (plant / "readings.csv").open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            next(reader)
            conn.execute("BEGIN")
            before = conn.total_changes
            conn.executemany(
                "INSERT INTO readings (sensor_id, recorded_at, value) VALUES (?, ?, ?)",
                ((sensors[(row[0], row[1])], row[2], row[3]) for row in reader),
            )
            added = conn.total_changes - before
            conn.execute("COMMIT")
        return time.perf_counter() - started, added
    finally:
        conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="readings in the generated file")
    args = parser.parse_args()
    print(f"python {platform.python_version()} · sqlite {sqlite3.sqlite_version} · {platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        template, plant = await prepare(folder, args.rows)
        size = (plant / "readings.csv").stat().st_size / 1e6
        print(f"generated {args.rows:,} readings ({size:.0f} MB) in {time.perf_counter() - started:.1f} s")
        ours, ours_rows = await time_pumpops(fresh_copy(template, folder / "pumpops.db"), plant)
        bare, bare_rows = time_bare(fresh_copy(template, folder / "bare.db"), plant)
    ours_rate, bare_rate = ours_rows / ours, bare_rows / bare
    print(f"pumpops import: {ours_rows:,} rows in {ours:.2f} s = {ours_rate:,.0f} rows/s")
    print(f"bare sqlite3:   {bare_rows:,} rows in {bare:.2f} s = {bare_rate:,.0f} rows/s")
    ratio = ours_rate / bare_rate
    verdict = "meets" if ratio >= RATIO_TARGET else "MISSES"
    print(f"ratio pumpops/bare: {ratio:.2f}x (target >= {RATIO_TARGET}x: {verdict})")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
