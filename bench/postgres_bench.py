"""PostgreSQL beside SQLite in one run: the registry bench, then the 20-session load test, on both backends.

1. The registry bench (``bench/registry_bench.py --backend both``): it generates the same fleet on an SQLite file
   and on a database of a real PostgreSQL 16 that pgserver starts in ``bench/results/postgres`` (fill rate of
   ``twin.generator.generate_fleet`` on each), times kernel calls against the bare driver query, and shows the
   plans of the queries over the readings table.
2. The load test of tests/load/test_concurrency.py (`run_sessions`: 10 MCP sessions against a ``pumpops mcp
   --http`` process and 10 in-process turn sessions, reads and parked writes, then two supervisors approving one
   write at once), once on a fresh SQLite file and once on a fresh PostgreSQL database.

It ends with the figures side by side and the targets: kernel p50 <= 2x bare and get_pump_details p50 < 5 ms;
load p95 < 100 ms on PostgreSQL. No figure is asserted; a broken invariant of the load (an error, audit rows
unequal to invocations, a broken chain, not exactly one work order) is printed as such.

Run (default size, a few minutes on 2 cores: 10,000 pumps x 20 readings per sensor = 1 M readings, 60 s of load
per backend):
       .venv/bin/python bench/postgres_bench.py
Full size (10,000 pumps x 200 readings per sensor = 10 M readings):
       .venv/bin/python bench/postgres_bench.py --readings-per-sensor 200
Smoke: .venv/bin/python bench/postgres_bench.py --pumps 200 --iterations 50 --load-seconds 15
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import registry_bench  # bench/ is this script's folder, first on sys.path
from registry_bench import BACKEND_NAMES, BACKENDS, BackendRun, PostgresServer, percentile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the load test lives in tests/load
from tests.load.test_concurrency import LoadRun, load_test_settings, p95, run_sessions

LOAD_P95_TARGET_MS = 100.0
MIN_LOAD_SECONDS = 15.0
DEFAULT_READINGS_PER_SENSOR = 20


async def load_on(
    backend: str, server: PostgresServer, seconds: float, think: float = 0.0
) -> tuple[LoadRun, float | None]:
    """One load run on a fresh database of ``backend``; ``think`` the sessions' mean pause between calls."""
    pace = f", {think:g} s think time" if think else ", back to back"
    print(f"\n=== load test on {BACKEND_NAMES[backend]}: 20 sessions x {seconds:g} s{pace} ===", flush=True)
    before = cpu_ticks()
    with tempfile.TemporaryDirectory() as tmp:
        if backend == "sqlite":
            run = await run_sessions(load_test_settings(Path(tmp)), seconds, think)
        else:
            name = f"bench_load_{os.getpid()}"
            await registry_bench.recreate_database(server, name)
            try:
                run = await run_sessions(load_test_settings(Path(tmp), server.url(name)), seconds, think)
            finally:
                await registry_bench.drop_database(server, name)
    busy = cpu_busy(before, cpu_ticks())
    print(run.line() + (f"; machine CPU busy {busy:.0%} (all processes, {os.cpu_count()} CPUs)" if busy else ""))
    for problem in invariant_problems(run):
        print(f"  BROKEN: {problem}")
    return run, busy


def cpu_ticks() -> tuple[int, int] | None:
    """Busy and total CPU ticks of the whole machine so far (Linux /proc/stat), or None elsewhere."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_busy(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def invariant_problems(run: LoadRun) -> list[str]:
    problems = []
    if run.errors:
        problems.append(f"{len(run.errors)} errors, first: {run.errors[0]}")
    if run.audit_rows != run.invocations:
        problems.append(f"{run.audit_rows} audit rows for {run.invocations} invocations")
    if run.chain is not None:
        problems.append(f"the audit chain breaks at row {run.chain}")
    if run.work_orders != 1:
        problems.append(f"{run.work_orders} work orders after two concurrent approvals of one (expected 1)")
    return problems


def print_summary(
    args: argparse.Namespace, registry: list[BackendRun], loads: dict[str, tuple[LoadRun, float | None]]
) -> None:
    print("\n=== PostgreSQL beside SQLite ===")
    size = (
        f"size: {args.pumps:,} pumps x 5 sensors x {args.readings_per_sensor} readings "
        f"({args.pumps * 5 * args.readings_per_sensor:,} generated readings); {args.iterations} timed calls a path; "
    )
    duration = f"load {args.load_seconds:g} s per backend, think time {args.think_seconds:g} s; "
    print((size if registry else "") + (duration if loads else "") + f"{os.cpu_count()} CPUs")
    for run in registry:
        fill = f"{run.fill.rate / 1e3:,.1f} k readings/s" if run.fill else "not measured (reused)"
        audit = percentile(run.audit_ms, 50)
        print(f"{run.name}: fill {fill}; {run.size_mb:,.0f} MB; bare = {run.bare_name}; audit row p50 {audit:.3f} ms")
    if registry:
        print(
            f"{'function':<27} {'arguments':<22}"
            + "".join(f" | {run.name + ' p50 / p95 / bare / ratio':<42}" for run in registry)
        )
        for row in zip(*(run.timings for run in registry), strict=True):
            print(
                f"{row[0].case.name:<27} {row[0].case.label:<22}"
                + "".join(
                    f" | {t.kernel_p50:6.3f} / {percentile(t.kernel_ms, 95):6.3f} / {t.bare_p50:6.3f} / "
                    f"{t.ratio:5.2f}x {'PASS' if t.passed else 'MISS':<4} "
                    for t in row
                )
            )
    for backend, (load, busy) in loads.items():
        writes = f", writes (MCP create_work_order) p95 {p95(load.writes):.1f} ms" if load.writes else ""
        cpu = f"; CPU busy {busy:.0%}" if busy else ""
        print(
            f"load {BACKEND_NAMES[backend]}: {load.invocations:,} invocations in {load.seconds:.0f} s, "
            f"p50 {load.p50:.1f} ms, p95 {load.p95:.1f} ms{writes}{cpu}; "
            + ("invariants hold" if not invariant_problems(load) else "; ".join(invariant_problems(load)))
        )
    print("targets on PostgreSQL:")
    postgres = next((run for run in registry if run.backend == "postgresql"), None)
    if postgres is not None:
        ratio_ok = [t for t in postgres.timings if t.ratio <= registry_bench.RATIO_TARGET]
        print(
            f"  kernel p50 <= {registry_bench.RATIO_TARGET:g}x bare: {len(ratio_ok)} of {len(postgres.timings)} "
            "functions"
        )
        details = next(t for t in postgres.timings if t.case.pump_details_target)
        verdict = "met" if details.kernel_p50 < registry_bench.PUMP_DETAILS_P50_TARGET_MS else "MISSED"
        print(
            f"  get_pump_details p50 < {registry_bench.PUMP_DETAILS_P50_TARGET_MS:g} ms: "
            f"{details.kernel_p50:.3f} ms, {verdict}"
        )
        under = [t for t in postgres.timings if t.kernel_p50 < registry_bench.PUMP_DETAILS_P50_TARGET_MS]
        print(f"  (p50 < 5 ms for {len(under)} of {len(postgres.timings)} functions)")
        scans = [p.query for p in postgres.plans if not p.ok]
        if postgres.plans:
            print("  plans: " + ("no query scans the readings table" if not scans else "SCANS: " + ", ".join(scans)))
    if "postgresql" in loads:
        load = loads["postgresql"][0]
        verdict = "met" if load.p95 < LOAD_P95_TARGET_MS else "MISSED"
        sqlite = loads["sqlite"][0] if "sqlite" in loads else None
        beside = f" (SQLite {sqlite.p95:.1f} ms, {load.p95 / sqlite.p95:.2f}x)" if sqlite else ""
        print(f"  load p95 < {LOAD_P95_TARGET_MS:g} ms: {load.p95:.1f} ms{beside}, {verdict}")


async def run(args: argparse.Namespace) -> int:
    server = await asyncio.to_thread(
        registry_bench.start_server, registry_bench.resolved(args.postgres_dir), args.postgres_url
    )
    try:
        registry: list[BackendRun] = []
        if not args.skip_registry:
            registry = await registry_bench.run_backends(args, server)
        loads: dict[str, tuple[LoadRun, float | None]] = {}
        if not args.skip_load:
            for backend in BACKENDS:
                loads[backend] = await load_on(backend, server, args.load_seconds, args.think_seconds)
    finally:
        await asyncio.to_thread(server.stop)
    print_summary(args, registry, loads)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    registry_bench.add_size_arguments(parser, readings_per_sensor=DEFAULT_READINGS_PER_SENSOR)
    parser.add_argument(
        "--reuse", action="store_true", help="reuse fleets of this size built before (no fill rate is measured)"
    )
    parser.add_argument("--load-seconds", type=float, default=60.0, help="seconds of load per backend (default 60)")
    parser.add_argument(
        "--think-seconds",
        type=float,
        default=0.0,
        help="each session's mean pause between calls, as an operator reads (default 0: back to back, a stress test)",
    )
    parser.add_argument("--skip-registry", action="store_true", help="only the load test")
    parser.add_argument("--skip-load", action="store_true", help="only the registry bench")
    args = parser.parse_args(argv)
    registry_bench.check_size_arguments(parser, args)
    if args.load_seconds < MIN_LOAD_SECONDS:
        # Each MCP session writes on its 10th call; the load checks that writes were parked.
        parser.error(f"--load-seconds must be at least {MIN_LOAD_SECONDS:g} (each MCP session writes on its 10th call)")
    if args.think_seconds < 0:
        parser.error("--think-seconds must be 0 or more")
    # What registry_bench.run_backends reads besides the size flags.
    args.backend = "both"
    args.rebuild = not args.reuse  # fill rates are part of the comparison
    args.db = None
    args.separate_connection = False
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
