"""Registry latency bench: kernel functions versus the bare SQL they run, on a generated fleet (SQLite, PostgreSQL).

Builds (or reuses) a fleet of ``--pumps`` pumps (the 8-pump sample fleet plus generated pumps), five
sensors each and ``--readings-per-sensor`` readings per generated sensor: in a SQLite file under
``bench/results/``, and/or (``--backend postgresql`` or ``both``) in a database of a real PostgreSQL that
pgserver starts in ``bench/results/postgres`` (or of the server ``--postgres-url`` names). Then, for each read
function, it times ``await kernel.invoke(function, args)`` against the same SQL statements issued directly on
the driver (aiosqlite / asyncpg), and prints p50/p95 latencies with the targets (kernel p50 <= 2x bare p50;
get_pump_details p50 < 5 ms), the generator's fill rate when it built the fleet, and on PostgreSQL the plans
of the queries that read the readings table. With both backends it ends with the two side by side. The
cases and their SQL are in ``bench/registry_cases.py``.

Run:   .venv/bin/python bench/registry_bench.py
Both:  .venv/bin/python bench/registry_bench.py --backend both --readings-per-sensor 20
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
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg
import semantic_kernel
from registry_cases import (  # bench/ is this script's folder, first on sys.path
    LATEST_COUNT_SQL,
    LATEST_LIST_SQL,
    MAX_READINGS_LISTED,
    NEWEST_READING_SQL,
    SUMMARY_WORST_SQL,
    TREND_DAYS,
    TREND_SENSOR_SQL,
    Bare,
    Case,
    PostgresBare,
    SqliteBare,
    build_cases,
    pump_id,
)

from governance.audit_log import AuditOutcome
from kernel_setup import load_settings, open_app
from storage import open_database
from storage.dialect import POSTGRES, SQLITE, to_postgres
from storage.errors import StorageError
from storage.local_server import LocalPostgres, start_postgres
from storage.urls import with_database
from twin.generator import generate_fleet
from twin.models import SensorType
from twin.sample_fleet import load_sample_fleet
from twin.sample_fleet_data import SAMPLE_PUMPS
from twin.sensors import trend_stats_query
from twin.timestamps import format_ts, parse_ts

RESULTS_DIR = Path(__file__).resolve().parent / "results"
POSTGRES_DIR = RESULTS_DIR / "postgres"
BACKENDS = ("sqlite", "postgresql")
BACKEND_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}
RATIO_TARGET = 2.0
PUMP_DETAILS_P50_TARGET_MS = 5.0
WARMUP_SECONDS = 1.0

Target = str | Path  # what open_database takes: an SQLite path or a PostgreSQL URL

# --- PostgreSQL: a server, and one database per fleet size. ---


@dataclass
class PostgresServer:
    """The server the PostgreSQL fleets live on: its maintenance URL, and pgserver's handle when we started it."""

    admin_url: str
    local: LocalPostgres | None = None

    def url(self, database: str) -> str:
        return with_database(self.admin_url, database)

    def stop(self) -> None:
        if self.local is not None:
            self.local.stop()


def start_server(folder: Path, admin_url: str | None) -> PostgresServer:
    """Join the server at ``admin_url`` (its maintenance database), or start pgserver's in ``folder``."""
    if admin_url:
        return PostgresServer(admin_url)
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset; harmless
        warnings.simplefilter("ignore")
        local = start_postgres(folder)
    print(f"PostgreSQL {local.version} from pgserver in {folder}")
    return PostgresServer(local.admin_url, local)


async def _admin(server: PostgresServer, sql: str, *args: Any) -> Any:
    conn = await asyncpg.connect(server.admin_url)
    try:
        return await conn.fetch(sql, *args)
    finally:
        await conn.close()


async def database_exists(server: PostgresServer, name: str) -> bool:
    return bool(await _admin(server, "SELECT 1 FROM pg_database WHERE datname = $1", name))


async def recreate_database(server: PostgresServer, name: str) -> None:
    await _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    await _admin(server, f"CREATE DATABASE {name}")


async def drop_database(server: PostgresServer, name: str) -> None:
    await _admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def configure_asyncpg(conn: asyncpg.Connection) -> None:
    """As storage/postgres.py configures its connections: ``numeric`` read as a float."""
    await conn.set_type_codec("numeric", encoder=str, decoder=float, schema="pg_catalog", format="text")


# --- Fleet: build or reuse. ---


@dataclass
class Fleet:
    """Where one backend's fleet lives."""

    backend: str
    target: Target
    server: PostgresServer | None = None
    database: str | None = None  # the PostgreSQL database's name


def sqlite_fleet(args: argparse.Namespace) -> Fleet:
    path = Path(args.db) if args.db else RESULTS_DIR / f"registry-{args.pumps}p-{args.readings_per_sensor}r.db"
    return Fleet("sqlite", path.resolve())


def postgres_fleet(args: argparse.Namespace, server: PostgresServer) -> Fleet:
    name = f"bench_registry_{args.pumps}p_{args.readings_per_sensor}r"
    return Fleet("postgresql", server.url(name), server, name)


async def existing_fleet_matches(fleet: Fleet, pumps: int, readings_per_sensor: int) -> bool:
    """True when the fleet's database holds a complete fleet of exactly this size (sample fleet + generated pumps)."""
    if fleet.backend == "sqlite":
        if not is_file(Path(fleet.target)):
            return False
    elif fleet.server is None or fleet.database is None or not await database_exists(fleet.server, fleet.database):
        return False
    try:
        db = await open_database(fleet.target, migrate=False)
    except StorageError:
        return False
    try:
        row = await db.fetch_one("SELECT COUNT(*) AS n FROM pumps")
        if row is None or row["n"] != pumps:
            return False
        row = await db.fetch_one("SELECT COUNT(*) AS n FROM pumps WHERE pump_id = ?", (SAMPLE_PUMPS[0].pump_id,))
        if row is None or row["n"] != 1:
            return False
        # The last generated pump is written in the last batch: a complete count there means a complete run.
        row = await db.fetch_one(
            "SELECT COUNT(*) AS n, COUNT(DISTINCT r.sensor_id) AS sensors FROM readings r "
            "JOIN sensors s ON s.sensor_id = r.sensor_id WHERE s.pump_id = ?",
            (pump_id(pumps),),
        )
        return (
            row is not None and row["sensors"] == len(SensorType) and row["n"] == len(SensorType) * readings_per_sensor
        )
    except StorageError:  # reads wrap the driver's errors (a missing table: a half-made database)
        return False
    finally:
        await db.close()


def is_file(path: Path) -> bool:
    return path.is_file()


def resolved(folder: str) -> Path:
    return Path(folder).resolve()


def remove_sqlite(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclass(frozen=True)
class Fill:
    """One build of a fleet: wall seconds in all, and the generator's own seconds and rate."""

    seconds: float
    generate_seconds: float
    readings: int

    @property
    def rate(self) -> float:
        return self.readings / self.generate_seconds


async def build_fleet(fleet: Fleet, pumps: int, readings_per_sensor: int) -> Fill:
    """Create the database from scratch; return the wall seconds and the generator's fill rate."""
    if fleet.backend == "sqlite":
        remove_sqlite(Path(fleet.target))
    else:
        assert fleet.server is not None and fleet.database is not None
        await recreate_database(fleet.server, fleet.database)
    generated = pumps - len(SAMPLE_PUMPS)
    started = time.perf_counter()
    db = await open_database(fleet.target)
    try:
        await load_sample_fleet(db)
        generate_started = time.perf_counter()
        done = 0
        step = max(1, generated // 5)
        next_report = step

        def progress(batch: int) -> None:
            nonlocal done, next_report
            done += batch
            if done >= next_report or done == generated:
                elapsed = time.perf_counter() - generate_started
                rate = done * len(SensorType) * readings_per_sensor / elapsed
                print(f"  {done:>7,}/{generated:,} pumps  {elapsed:7.1f} s  {rate / 1e3:8.1f} k readings/s", flush=True)
                next_report += step

        report = await generate_fleet(db, generated, readings_per_sensor, progress=progress)
        generate_seconds = time.perf_counter() - generate_started
    finally:
        await db.close()
    seconds = time.perf_counter() - started
    print(
        f"  generated {report.pumps:,} pumps, {report.sensors:,} sensors, {report.readings:,} readings, "
        f"{report.alarms:,} alarms ({report.first_pump_id}..{report.last_pump_id}) in {generate_seconds:.1f} s"
    )
    if fleet.backend == "postgresql":
        # What autovacuum does soon after a bulk load, done at once: planner statistics and the visibility map.
        vacuum_started = time.perf_counter()
        conn = await asyncpg.connect(str(fleet.target))
        try:
            await conn.execute("VACUUM ANALYZE")
        finally:
            await conn.close()
        print(f"  VACUUM ANALYZE {time.perf_counter() - vacuum_started:.1f} s (not in the fill rate)")
    return Fill(seconds, generate_seconds, report.readings)


async def fleet_counts(fleet: Fleet) -> dict[str, int]:
    db = await open_database(fleet.target, migrate=False)
    try:
        out = {}
        for name, sql in (
            ("pumps", "SELECT COUNT(*) AS n FROM pumps"),
            ("sensors", "SELECT COUNT(*) AS n FROM sensors"),
            ("readings", "SELECT COUNT(*) AS n FROM readings"),
            ("alarms", "SELECT COUNT(*) AS n FROM alarms"),
            ("active alarms", "SELECT COUNT(*) AS n FROM alarms WHERE active = 1"),
        ):
            row = await db.fetch_one(sql)
            out[name] = int(row["n"]) if row else 0
        return out
    finally:
        await db.close()


async def size_on_disk_mb(fleet: Fleet) -> float:
    if fleet.backend == "sqlite":
        path = Path(fleet.target)
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
    conn = await asyncpg.connect(str(fleet.target))
    try:
        return float(await conn.fetchval("SELECT pg_database_size(current_database())")) / 1e6
    finally:
        await conn.close()


# --- Timing. ---


@dataclass
class Timing:
    case: Case
    kernel_ms: list[float]
    service_ms: list[float]
    bare_ms: list[float]

    @property
    def kernel_p50(self) -> float:
        return percentile(self.kernel_ms, 50)

    @property
    def bare_p50(self) -> float:
        return percentile(self.bare_ms, 50)

    @property
    def ratio(self) -> float:
        return self.kernel_p50 / self.bare_p50

    @property
    def passed(self) -> bool:
        ok = self.ratio <= RATIO_TARGET
        if self.case.pump_details_target:
            ok = ok and self.kernel_p50 < PUMP_DETAILS_P50_TARGET_MS
        return ok


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
        f"{'function':<27} {'arguments':<22} {'kernel p50':>10} {'p95':>7} {'service p50':>11} "
        f"{'bare p50':>9} {'p95':>7} {'ratio p50':>9}  {'target':<26} result"
    )
    print(header)
    print("-" * len(header))
    for t in timings:
        k95 = percentile(t.kernel_ms, 95)
        s50 = percentile(t.service_ms, 50)
        b95 = percentile(t.bare_ms, 95)
        target = f"<= {RATIO_TARGET:g}x bare"
        if t.case.pump_details_target:
            target += f", p50 < {PUMP_DETAILS_P50_TARGET_MS:g} ms"
        print(
            f"{t.case.name:<27} {t.case.label:<22} {t.kernel_p50:>8.3f}ms {k95:>7.3f} {s50:>9.3f}ms "
            f"{t.bare_p50:>7.3f}ms {b95:>7.3f} {t.ratio:>8.2f}x  {target:<26} {'PASS' if t.passed else 'MISS'}"
        )
    return all(t.passed for t in timings)


async def time_audit_row(app: Any, iterations: int) -> list[float]:
    """What the kernel path adds to every call: one audit row, its own write transaction (lock, head, insert)."""
    samples = []
    for i in range(iterations + 20):
        started = time.perf_counter()
        await app.audit.record(function="bench-audit_row", arguments={"i": i}, outcome=AuditOutcome.OK, effect=None)
        if i >= 20:
            samples.append((time.perf_counter() - started) * 1000.0)
    return samples


# --- Plans: do the queries over readings use the key, or scan the table? ---


@dataclass(frozen=True)
class Plan:
    query: str
    table: str  # the table the query is about: readings (through its key), or sensors (readings never read)
    text: str  # the plan, as the engine printed it
    ok: bool  # readings searched through its primary key, never scanned whole; or not read at all

    @property
    def verdict(self) -> str:
        if self.table == "readings":
            return "primary-key range" if self.ok else "SCANS readings"
        return "readings not read" if self.ok else "READS readings"

    def shown(self) -> str:
        """The plan for the report: whole for the readings queries, its scan lines for the others."""
        if self.table == "readings":
            return self.text
        keep = (" Scan ", "SCAN ", "SEARCH ", "--")
        return "\n".join(line for line in self.text.splitlines() if any(k in f" {line}" for k in keep))


async def explain_queries(bare: Bare, backend: str) -> list[Plan]:
    """The plans of the trend, the newest-reading lookup, the latest readings and the summary (first generated pump)."""
    sensor = await bare.fetch_one(TREND_SENSOR_SQL, (pump_id(len(SAMPLE_PUMPS) + 1), SensorType.VIBRATION.value))
    assert sensor is not None
    end = sensor["latest_at"]
    start = format_ts(parse_ts(end) - timedelta(days=TREND_DAYS))
    dialect = POSTGRES if backend == "postgresql" else SQLITE
    queries: list[tuple[str, str, tuple[Any, ...], str]] = [
        (
            f"trend ({TREND_DAYS} d of one sensor)",
            trend_stats_query(dialect),
            (sensor["sensor_id"], start, end),
            "readings",
        ),
        ("newest reading of one sensor", NEWEST_READING_SQL, (sensor["sensor_id"],), "readings"),
        ("latest readings: count", LATEST_COUNT_SQL, ("vibration", None, None), "sensors"),
        (
            "latest readings: ranked list",
            LATEST_LIST_SQL.format(order="s.latest_value DESC"),
            ("vibration", None, None, MAX_READINGS_LISTED),
            "sensors",
        ),
        ("fleet summary: worst pump", SUMMARY_WORST_SQL, (), "sensors"),
    ]
    plans = []
    for name, sql, params, table in queries:
        if backend == "postgresql":
            assert isinstance(bare, PostgresBare)
            pg_sql = to_postgres(sql)
            rows = await bare.conn.fetch("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) " + pg_sql, *params)
            generic = await generic_plan(bare.conn, pg_sql, params)
            custom_text = "\n".join(r[0] for r in rows)
            both = custom_text + "\n".join(r[0] for r in generic)
            text = (
                custom_text
                + "\n-- generic plan (a prepared statement may switch to it):\n"
                + "\n".join(r[0] for r in generic)
            )
            if table == "readings":
                ok = "Seq Scan on readings" not in both and "readings_pkey" in custom_text
            else:
                ok = "readings" not in both
        else:
            assert isinstance(bare, SqliteBare)
            rows = await bare.conn.execute_fetchall("EXPLAIN QUERY PLAN " + sql, params)
            text = "\n".join(str(r[3]) for r in rows)
            if table == "readings":
                ok = "SCAN readings" not in text and "SEARCH readings USING PRIMARY KEY" in text
            else:
                ok = "readings" not in text
        plans.append(Plan(name, table, text, ok))
    return plans


async def generic_plan(conn: asyncpg.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """The plan a prepared statement gets once PostgreSQL settles on a generic plan (as asyncpg's cached ones may)."""
    await conn.execute(f"PREPARE bench_plan AS {sql}")
    try:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        values = ", ".join(_literal(v) for v in params)
        return list(
            await conn.fetch(
                f"EXPLAIN (COSTS OFF) EXECUTE bench_plan({values})"
                if values
                else "EXPLAIN (COSTS OFF) EXECUTE bench_plan"
            )
        )
    finally:
        await conn.execute("RESET plan_cache_mode")
        await conn.execute("DEALLOCATE bench_plan")


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


async def readings_table_size(bare: Bare, backend: str) -> str:
    if backend == "postgresql":
        assert isinstance(bare, PostgresBare)
        row = await bare.conn.fetchrow(
            "SELECT pg_relation_size('readings') / 8192 AS heap, pg_relation_size('readings_pkey') / 8192 AS pkey"
        )
        return f"readings: {row['heap']:,} heap pages, readings_pkey: {row['pkey']:,} index pages (8 kB)"
    return "readings: a WITHOUT ROWID table, its primary key is the table"


# --- One backend. ---


@dataclass
class BackendRun:
    backend: str
    description: str
    counts: dict[str, int]
    size_mb: float
    fill: Fill | None
    timings: list[Timing] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    bare_name: str = ""
    audit_ms: list[float] = field(default_factory=list)  # one audit row appended in a write transaction of its own

    @property
    def name(self) -> str:
        return BACKEND_NAMES[self.backend]


async def run_backend(fleet: Fleet, args: argparse.Namespace) -> BackendRun:
    name = BACKEND_NAMES[fleet.backend]
    where = fleet.target if fleet.backend == "sqlite" else f"database {fleet.database}"
    print(f"\n=== {name}: {where} ===")
    fill = None
    if not args.rebuild and await existing_fleet_matches(fleet, args.pumps, args.readings_per_sensor):
        print(f"reusing the existing fleet of {args.pumps:,} pumps x {args.readings_per_sensor} readings/sensor")
    else:
        print(
            f"generating {args.pumps:,} pumps (8 sample + {args.pumps - len(SAMPLE_PUMPS):,} generated) "
            f"x {len(SensorType)} sensors x {args.readings_per_sensor} readings "
            f"= {args.pumps * len(SensorType) * args.readings_per_sensor:,} readings"
        )
        fill = await build_fleet(fleet, args.pumps, args.readings_per_sensor)
        print(f"build took {fill.seconds:.1f} s; generator fill rate {fill.rate / 1e3:,.1f} k readings/s")
    counts = await fleet_counts(fleet)
    size_mb = await size_on_disk_mb(fleet)
    print("fleet: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()) + f"; {size_mb:,.0f} MB on disk")

    warmup = max(20, args.iterations // 5)
    with tempfile.TemporaryDirectory() as tmp:
        settings_file = Path(tmp) / "appsettings.json"
        key = "Path" if fleet.backend == "sqlite" else "Url"
        database = {key: str(fleet.target)}
        settings_file.write_text(json.dumps({"Database": database}), encoding="utf-8")
        settings = load_settings(settings_file, env={})
    async with open_app(settings) as app:
        # SQLite: by default the bare SQL runs on the app's own aiosqlite reader connection, so both sides pay the
        # same hand-off to the same worker thread; a second connection adds a second thread, and on a small VM the
        # two threads' wake-up latencies can differ by ~0.5 ms for long stretches, which swamps the comparison.
        # PostgreSQL: a connection of its own (no thread to share; the app reads through its pool).
        own: Any = None
        if fleet.backend == "sqlite":
            own = await open_bare(Path(fleet.target)) if args.separate_connection else None
            bare: Bare = SqliteBare(own or app.db._reader)  # type: ignore[attr-defined]
        else:
            own = await asyncpg.connect(str(fleet.target))
            await configure_asyncpg(own)
            bare = PostgresBare(own)
        try:
            run = BackendRun(fleet.backend, app.db.description, counts, size_mb, fill, bare_name=bare.name)
            cases = build_cases(app, bare, counts["pumps"])
            print(
                f"timing: >= {warmup} warm-up calls and >= {WARMUP_SECONDS:g} s, then {args.iterations} timed calls "
                f"per path and function, seed {args.seed}"
            )
            size_line = ""
            for n, case in enumerate(cases):
                run.timings.append(await time_case(case, args.iterations, warmup, args.seed + n, args.case_budget))
            run.audit_ms = await time_audit_row(app, args.iterations)
            if not args.no_explain:
                run.plans = await explain_queries(bare, fleet.backend)
                size_line = await readings_table_size(bare, fleet.backend)
        finally:
            if own is not None:
                await own.close()
    print()
    print("kernel = await kernel.invoke(function, KernelArguments(...)); service = the twin service method alone;")
    if fleet.backend == "sqlite":
        where = "a second aiosqlite connection" if args.separate_connection else "the app's aiosqlite reader connection"
    else:
        where = "an asyncpg connection of its own"
    print(f"bare = the same SQL statements issued directly on {where} (rows fetched; no models, no JSON).")
    print()
    all_pass = print_table(run.timings)
    for t in run.timings:
        calls = len(t.kernel_ms)
        if calls < args.iterations:
            print(f"note: {t.case.name} ({t.case.label}) was timed over {calls} calls per path, not {args.iterations}")
    print("all targets met" if all_pass else "some targets missed")
    print(
        f"the audit row every kernel call appends (AuditLog.record: one write transaction of its own): "
        f"p50 {percentile(run.audit_ms, 50):.3f} ms, p95 {percentile(run.audit_ms, 95):.3f} ms"
    )
    if run.plans:
        print()
        print(f"plans on {name} ({size_line}):")
        for plan in run.plans:
            print(f"- {plan.query}: {plan.verdict}")
            print("    " + plan.shown().replace("\n", "\n    "))
    return run


# --- Both side by side. ---


def print_side_by_side(runs: list[BackendRun]) -> None:
    print("\n=== side by side (ms; ratio = kernel p50 / bare p50) ===")
    print("fill rate: " + "; ".join(_fill(run) for run in runs))
    group = f"{'kernel p50':>10} {'p95':>7} {'bare p50':>9} {'ratio':>6} {'':4}"
    first = f"{'':<27} {'':<22}" + "".join(f" | {run.name:<{len(group)}}" for run in runs)
    header = f"{'function':<27} {'arguments':<22}" + "".join(f" | {group}" for _ in runs)
    print(first)
    print(header)
    print("-" * len(header))
    for row in zip(*(run.timings for run in runs), strict=True):
        line = f"{row[0].case.name:<27} {row[0].case.label:<22}"
        for t in row:
            line += (
                f" | {t.kernel_p50:>10.3f} {percentile(t.kernel_ms, 95):>7.3f} {t.bare_p50:>9.3f} "
                f"{t.ratio:>5.2f}x {'PASS' if t.passed else 'MISS'}"
            )
        print(line)
    for run in runs:
        missed = [f"{t.case.name} ({t.case.label})" for t in run.timings if not t.passed]
        print(f"{run.name}: " + ("all targets met" if not missed else "missed: " + "; ".join(missed)))
        if run.plans:
            print("  plans: " + ", ".join(f"{p.query}: {p.verdict}" for p in run.plans))


def _fill(run: BackendRun) -> str:
    if run.fill is None:
        return f"{run.name} not measured (fleet reused; --rebuild measures it)"
    fill = run.fill
    return f"{run.name} {fill.rate / 1e3:,.1f} k readings/s ({fill.readings:,} in {fill.generate_seconds:.1f} s)"


# --- Main. ---


async def run_backends(args: argparse.Namespace, server: PostgresServer | None = None) -> list[BackendRun]:
    """The bench on each backend ``args.backend`` names; ``server`` is the PostgreSQL to use (else one is started)."""
    print(
        f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}, "
        f"semantic-kernel {semantic_kernel.__version__}, aiosqlite {aiosqlite.__version__}, "
        f"asyncpg {asyncpg.__version__}"
    )
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    own_server = server is None and "postgresql" in backends
    if own_server:
        server = await asyncio.to_thread(start_server, resolved(args.postgres_dir), args.postgres_url)
    runs = []
    try:
        for backend in backends:
            fleet = sqlite_fleet(args) if backend == "sqlite" else postgres_fleet(args, server)  # type: ignore[arg-type]
            runs.append(await run_backend(fleet, args))
    finally:
        if own_server and server is not None:
            await asyncio.to_thread(server.stop)
    if len(runs) > 1:
        print_side_by_side(runs)
    return runs


async def run(args: argparse.Namespace) -> int:
    await run_backends(args)
    return 0


def add_size_arguments(parser: argparse.ArgumentParser, *, readings_per_sensor: int) -> None:
    """The flags that size the fleet and the timing (shared with bench/postgres_bench.py)."""
    parser.add_argument("--pumps", type=int, default=10_000, help="pumps in the fleet, sample fleet included")
    parser.add_argument(
        "--readings-per-sensor",
        type=int,
        default=readings_per_sensor,
        help=f"readings per generated sensor (default {readings_per_sensor}; 200 gives 10 M readings at 10,000 pumps)",
    )
    parser.add_argument("--iterations", type=int, default=300, help="timed calls per function and path")
    parser.add_argument(
        "--case-budget",
        type=float,
        default=60.0,
        help="seconds one function may take in all (slow functions are timed over fewer calls; default 60)",
    )
    parser.add_argument("--seed", type=int, default=20261202, help="seed for the pump ids and sensor types called")
    parser.add_argument(
        "--postgres-dir",
        default=str(POSTGRES_DIR),
        help="where pgserver keeps the PostgreSQL server's files (default bench/results/postgres)",
    )
    parser.add_argument(
        "--postgres-url",
        help="use this server instead of starting pgserver's: the URL of its maintenance database (postgresql://...)",
    )
    parser.add_argument("--no-explain", action="store_true", help="skip the query plans")


def check_size_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.pumps <= len(SAMPLE_PUMPS):
        parser.error(f"--pumps must exceed the {len(SAMPLE_PUMPS)} pumps of the sample fleet")
    if not 2 <= args.readings_per_sensor <= 100_000:
        parser.error("--readings-per-sensor must be between 2 and 100000")
    if args.iterations < 2:
        parser.error("--iterations must be at least 2")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--backend", choices=(*BACKENDS, "both"), default="sqlite", help="which database engine(s) (default sqlite)"
    )
    add_size_arguments(parser, readings_per_sensor=200)
    parser.add_argument("--rebuild", action="store_true", help="regenerate the fleet even when a matching one exists")
    parser.add_argument("--db", help="SQLite file (default: bench/results/registry-<pumps>p-<readings>r.db)")
    parser.add_argument(
        "--separate-connection",
        action="store_true",
        help="SQLite: issue the bare SQL on a second aiosqlite connection instead of the app's reader connection",
    )
    args = parser.parse_args(argv)
    check_size_arguments(parser, args)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
