"""Registry latency bench: kernel functions versus the bare SQL they run, on a generated fleet.

Builds (or reuses) a fleet of ``--pumps`` pumps (the 8-pump sample fleet plus generated pumps), five
sensors each and ``--readings-per-sensor`` readings per generated sensor, in a SQLite file under
``bench/results/``. Then, for each read function, it times ``await kernel.invoke(function, args)``
against the same SQL statements issued directly on a separate aiosqlite connection, and prints
p50/p95 latencies with the targets (kernel p50 <= 2x bare p50; get_pump_details p50 < 5 ms). The cases
and their SQL are in ``bench/registry_cases.py``.

Run:   .venv/bin/python bench/registry_bench.py
Smoke: .venv/bin/python bench/registry_bench.py --pumps 200 --readings-per-sensor 20 --iterations 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiosqlite
import semantic_kernel
from registry_cases import Case, build_cases, pump_id  # bench/ is this script's folder, first on sys.path

from kernel_setup import load_settings, open_app
from storage import Database
from twin.generator import generate_fleet
from twin.models import SensorType
from twin.sample_fleet import load_sample_fleet
from twin.sample_fleet_data import SAMPLE_PUMPS

RESULTS_DIR = Path(__file__).resolve().parent / "results"
RATIO_TARGET = 2.0
PUMP_DETAILS_P50_TARGET_MS = 5.0
WARMUP_SECONDS = 1.0

# --- Fleet: build or reuse. ---


def default_db_path(pumps: int, readings_per_sensor: int) -> Path:
    return RESULTS_DIR / f"registry-{pumps}p-{readings_per_sensor}r.db"


async def existing_fleet_matches(path: Path, pumps: int, readings_per_sensor: int) -> bool:
    """True when ``path`` holds a complete fleet of exactly this size (sample fleet + generated pumps)."""
    if not is_file(path):
        return False
    try:
        async with aiosqlite.connect(path) as conn:
            async with conn.execute("SELECT COUNT(*) FROM pumps") as cursor:
                row = await cursor.fetchone()
            if row is None or row[0] != pumps:
                return False
            async with conn.execute("SELECT COUNT(*) FROM pumps WHERE pump_id = ?", (SAMPLE_PUMPS[0].pump_id,)) as cur:
                row = await cur.fetchone()
            if row is None or row[0] != 1:
                return False
            # The last generated pump is written in the last batch: a complete count there means a complete run.
            last = pump_id(pumps)
            async with conn.execute(
                "SELECT COUNT(*), COUNT(DISTINCT r.sensor_id) FROM readings r "
                "JOIN sensors s ON s.sensor_id = r.sensor_id WHERE s.pump_id = ?",
                (last,),
            ) as cursor:
                row = await cursor.fetchone()
            return row is not None and row[1] == len(SensorType) and row[0] == len(SensorType) * readings_per_sensor
    except sqlite3.Error:
        return False


def is_file(path: Path) -> bool:
    return path.is_file()


def remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


async def build_fleet(path: Path, pumps: int, readings_per_sensor: int) -> float:
    """Create the database from scratch; return wall seconds."""
    remove_database(path)
    generated = pumps - len(SAMPLE_PUMPS)
    started = time.perf_counter()
    db = await Database.open(path)
    try:
        await load_sample_fleet(db)
        done = 0
        step = max(1, generated // 10)
        next_report = step

        def progress(batch: int) -> None:
            nonlocal done, next_report
            done += batch
            if done >= next_report or done == generated:
                elapsed = time.perf_counter() - started
                rate = done * len(SensorType) * readings_per_sensor / elapsed
                print(f"  {done:>7,}/{generated:,} pumps  {elapsed:7.1f} s  {rate / 1e3:8.1f} k readings/s", flush=True)
                next_report += step

        report = await generate_fleet(db, generated, readings_per_sensor, progress=progress)
    finally:
        await db.close()
    seconds = time.perf_counter() - started
    print(
        f"  generated {report.pumps:,} pumps, {report.sensors:,} sensors, {report.readings:,} readings, "
        f"{report.alarms:,} alarms ({report.first_pump_id}..{report.last_pump_id}); "
        f"generate_fleet reported {report.seconds} s"
    )
    return seconds


# --- Timing. ---


@dataclass
class Timing:
    case: Case
    kernel_ms: list[float]
    service_ms: list[float]
    bare_ms: list[float]


def percentile(values: Sequence[float], pct: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


async def open_bare(path: Path) -> aiosqlite.Connection:
    """A plain aiosqlite connection, configured as storage.database configures its reader."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    await conn.execute("PRAGMA busy_timeout=10000")
    await conn.execute("PRAGMA foreign_keys=ON")
    await conn.execute("PRAGMA synchronous=NORMAL")
    return conn


async def time_case(case: Case, iterations: int, warmup: int, seed: int, budget_s: float) -> Timing:
    rng = random.Random(seed)
    paths = (case.kernel_call, case.service_call, case.bare_call)
    # Correctness first: the kernel answer must agree with the bare rows. This also sizes one round.
    started = time.perf_counter()
    for _ in range(3):
        args = case.inputs(rng)
        case.check(await case.kernel_call(args), await case.bare_call(args))
        await case.service_call(args)
    round_s = (time.perf_counter() - started) / 3
    # Slow functions get fewer rounds so that one case stays within its time budget.
    if round_s * (iterations + warmup) > budget_s:
        iterations = max(20, int(budget_s / round_s * 0.8))
        warmup = max(3, int(budget_s / round_s * 0.2))
        print(
            f"  {case.name} ({case.label}): {round_s * 1000 / 3:.1f} ms a call; "
            f"cut to {warmup} warm-up + {iterations} timed calls to fit --case-budget {budget_s:g} s",
            flush=True,
        )
    # Warm up by count and by time: on a small VM, thread wake-up latency settles only after a while.
    warm_until = time.perf_counter() + min(WARMUP_SECONDS, budget_s * 0.2)
    done = 0
    while done < warmup or time.perf_counter() < warm_until:
        args = case.inputs(rng)
        for call in paths:
            await call(args)
        done += 1
    samples: list[list[float]] = [[], [], []]
    for i in range(iterations):
        args = case.inputs(rng)
        # Rotate which path goes first, so none of them always runs on the others' warm caches.
        for k in range(3):
            which = (i + k) % 3
            started = time.perf_counter()
            await paths[which](args)
            samples[which].append((time.perf_counter() - started) * 1000.0)
    return Timing(case, *samples)


def print_table(timings: list[Timing]) -> bool:
    header = (
        f"{'function':<26} {'arguments':<22} {'kernel p50':>10} {'p95':>7} {'service p50':>11} "
        f"{'bare p50':>9} {'p95':>7} {'ratio p50':>9}  {'target':<26} result"
    )
    print(header)
    print("-" * len(header))
    all_pass = True
    for t in timings:
        k50, k95 = percentile(t.kernel_ms, 50), percentile(t.kernel_ms, 95)
        s50 = percentile(t.service_ms, 50)
        b50, b95 = percentile(t.bare_ms, 50), percentile(t.bare_ms, 95)
        ratio = k50 / b50
        ok = ratio <= RATIO_TARGET
        target = f"<= {RATIO_TARGET:g}x bare"
        if t.case.pump_details_target:
            ok = ok and k50 < PUMP_DETAILS_P50_TARGET_MS
            target += f", p50 < {PUMP_DETAILS_P50_TARGET_MS:g} ms"
        all_pass = all_pass and ok
        print(
            f"{t.case.name:<26} {t.case.label:<22} {k50:>8.3f}ms {k95:>7.3f} {s50:>9.3f}ms "
            f"{b50:>7.3f}ms {b95:>7.3f} {ratio:>8.2f}x  {target:<26} {'PASS' if ok else 'MISS'}"
        )
    return all_pass


# --- Main. ---


async def fleet_counts(path: Path) -> dict[str, int]:
    async with aiosqlite.connect(path) as conn:
        out = {}
        for name, sql in (
            ("pumps", "SELECT COUNT(*) FROM pumps"),
            ("sensors", "SELECT COUNT(*) FROM sensors"),
            ("readings", "SELECT COUNT(*) FROM readings"),
            ("alarms", "SELECT COUNT(*) FROM alarms"),
            ("active alarms", "SELECT COUNT(*) FROM alarms WHERE active = 1"),
        ):
            async with conn.execute(sql) as cursor:
                row = await cursor.fetchone()
            out[name] = row[0] if row else 0
        return out


async def run(args: argparse.Namespace) -> int:
    path = Path(args.db) if args.db else default_db_path(args.pumps, args.readings_per_sensor)
    path = path.resolve()
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"semantic-kernel {semantic_kernel.__version__}, aiosqlite {aiosqlite.__version__}"
    )
    print(f"database: {path}")
    if await existing_fleet_matches(path, args.pumps, args.readings_per_sensor):
        print(f"reusing the existing fleet of {args.pumps:,} pumps x {args.readings_per_sensor} readings/sensor")
    else:
        print(
            f"generating {args.pumps:,} pumps (8 sample + {args.pumps - len(SAMPLE_PUMPS):,} generated) "
            f"x {len(SensorType)} sensors x {args.readings_per_sensor} readings "
            f"= {args.pumps * len(SensorType) * args.readings_per_sensor:,} readings"
        )
        seconds = await build_fleet(path, args.pumps, args.readings_per_sensor)
        print(f"generation took {seconds:.1f} s")
    counts = await fleet_counts(path)
    size_mb = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
    print("fleet: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()) + f"; {size_mb:,.0f} MB on disk")

    warmup = max(20, args.iterations // 5)
    with tempfile.TemporaryDirectory() as tmp:
        settings_file = Path(tmp) / "appsettings.json"
        settings_file.write_text(json.dumps({"Database": {"Path": str(path)}}), encoding="utf-8")
        settings = load_settings(settings_file, env={})
    async with open_app(settings) as app:
        # By default the bare SQL runs on the app's own aiosqlite reader connection, so both sides pay the same
        # hand-off to the same worker thread; a second connection adds a second thread, and on a small VM the
        # two threads' wake-up latencies can differ by ~0.5 ms for long stretches, which swamps the comparison.
        bare = await open_bare(path) if args.separate_connection else app.db._reader
        try:
            cases = build_cases(app, bare, counts["pumps"])
            print(
                f"timing: >= {warmup} warm-up calls and >= {WARMUP_SECONDS:g} s, then {args.iterations} timed calls "
                f"per path and function, seed {args.seed}"
            )
            timings = []
            for n, case in enumerate(cases):
                timings.append(await time_case(case, args.iterations, warmup, args.seed + n, args.case_budget))
        finally:
            if args.separate_connection:
                await bare.close()
    print()
    print("kernel = await kernel.invoke(function, KernelArguments(...)); service = the twin service method alone;")
    where = "a second aiosqlite connection" if args.separate_connection else "the app's aiosqlite reader connection"
    print(f"bare = the same SQL statements issued directly on {where} (rows fetched; no models, no JSON).")
    print()
    all_pass = print_table(timings)
    cut = [t for t in timings if len(t.kernel_ms) < args.iterations]
    for t in cut:
        calls = len(t.kernel_ms)
        print(f"note: {t.case.name} ({t.case.label}) was timed over {calls} calls per path, not {args.iterations}")
    print()
    print("all targets met" if all_pass else "some targets missed")
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pumps", type=int, default=10_000, help="pumps in the fleet, sample fleet included")
    parser.add_argument("--readings-per-sensor", type=int, default=200, help="readings per generated sensor")
    parser.add_argument("--iterations", type=int, default=300, help="timed calls per function and path")
    parser.add_argument("--db", help="database file (default: bench/results/registry-<pumps>p-<readings>r.db)")
    parser.add_argument(
        "--separate-connection",
        action="store_true",
        help="issue the bare SQL on a second aiosqlite connection instead of the app's reader connection",
    )
    parser.add_argument(
        "--case-budget",
        type=float,
        default=60.0,
        help="seconds one function may take in all (slow functions are timed over fewer calls; default 60)",
    )
    parser.add_argument("--seed", type=int, default=20261202, help="seed for the pump ids and sensor types called")
    args = parser.parse_args(argv)
    if args.pumps <= len(SAMPLE_PUMPS):
        parser.error(f"--pumps must exceed the {len(SAMPLE_PUMPS)} pumps of the sample fleet")
    if not 2 <= args.readings_per_sensor <= 100_000:
        parser.error("--readings-per-sensor must be between 2 and 100000")
    if args.iterations < 2:
        parser.error("--iterations must be at least 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
