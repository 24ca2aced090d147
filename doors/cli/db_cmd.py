"""`pumpops db`: create and load the registry, import a plant from files, grow a synthetic fleet."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from dataclasses import asdict
from pathlib import Path

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from doors.cli import import_cmd
from doors.cli.audit_cmd import EXIT_BROKEN_CHAIN
from doors.cli.common import CliState, fail, print_json, run, state
from governance.audit_log import AuditLog
from kernel_setup import Settings
from storage import open_database
from storage.copy import CopyReport, copy_database, count_rows
from storage.local_server import start_postgres
from storage.urls import is_postgres_url, mask_url
from twin.generator import GenerationReport, generate_fleet
from twin.sample_fleet import load_sample_fleet

app = typer.Typer(
    help="Create, load, import and grow the asset registry; copy it, or run a PostgreSQL to try.", no_args_is_help=True
)
app.command("import")(import_cmd.import_command)


@app.command("init")
def init(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON for machines.")) -> None:
    """Create and migrate the database and load the sample fleet if it is empty (safe to repeat).

    Example: pumpops db init
    """
    cli = state(ctx)
    settings = cli.settings()

    async def work() -> tuple[bool, int]:
        db = await open_database(settings.database_target)
        try:
            loaded = await load_sample_fleet(db)
            row = await db.fetch_one("SELECT COUNT(*) AS n FROM pumps")
            return loaded, row["n"] if row else 0
        finally:
            await db.close()

    loaded, pumps = run(cli, work())
    if as_json:
        print_json(cli, {"database": _database_shown(settings), "sample_loaded": loaded, "pumps": pumps})
        return
    what = "loaded the sample fleet" if loaded else "already initialised; nothing loaded"
    cli.console.print(f"Database {settings.database_description}: {what} ({pumps} pumps).", highlight=False)


def _database_shown(settings: Settings) -> str:
    """The database for machines: the SQLite file's path, or the PostgreSQL URL with its password masked."""
    url = settings.database.url
    return str(settings.database_path) if url is None else mask_url(url.get_secret_value())


@app.command("generate")
def generate(
    ctx: typer.Context,
    pumps: int = typer.Option(1000, "--pumps", min=1, max=1_000_000, help="How many pumps to add."),
    readings_per_sensor: int = typer.Option(
        200, "--readings-per-sensor", min=2, max=100_000, help="Readings per sensor (one every 6 hours)."
    ),
    seed: int = typer.Option(7, "--seed", help="Random seed, for repeatable fleets."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Grow the registry with a synthetic fleet (five sensors per pump, drift on a few pumps).

    Example: pumpops db generate --pumps 10000 --readings-per-sensor 200
    """
    cli = state(ctx)
    settings = cli.settings()

    async def work() -> GenerationReport:
        db = await open_database(settings.database_target)
        try:
            await load_sample_fleet(db)
            columns = (
                TextColumn("generating"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("pumps"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            with Progress(*columns, console=cli.err_console, disable=as_json) as bar:
                task = bar.add_task("pumps", total=pumps)
                return await generate_fleet(
                    db, pumps, readings_per_sensor, seed=seed, progress=lambda n: bar.advance(task, n)
                )
        finally:
            await db.close()

    report = run(cli, work())
    if as_json:
        print_json(cli, asdict(report))
        return
    cli.console.print(
        f"Added {report.pumps} pumps ({report.first_pump_id} … {report.last_pump_id}), {report.readings:,} readings "
        f"and {report.alarms} alarms in {report.seconds} s.",
        highlight=False,
    )


@app.command("copy")
def copy_command(
    ctx: typer.Context,
    to: str = typer.Option(
        ..., "--to", help="The empty target: a PostgreSQL URL (postgresql://user:password@host:5432/db) or a file."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Copy this database (every row, the audit chain intact) into an empty one; a non-empty target is refused.

    Example: pumpops db copy --to postgresql://pumpops:secret@db.example:5432/pumpops
    """
    cli = state(ctx)
    settings = cli.settings()
    target_text = to.strip()
    if not target_text:
        fail(cli, "--to needs a target: a PostgreSQL URL such as postgresql://user:password@host:5432/pumpops")
    target_spec: str | Path = target_text if is_postgres_url(target_text) else settings.resolve(target_text)

    async def work() -> tuple[CopyReport, dict[str, int], int | None]:
        source = await open_database(settings.database_target)
        try:
            target = await open_database(target_spec)
            try:
                with Progress(
                    TextColumn("{task.description:<20}"),
                    TextColumn("{task.completed:,} rows"),
                    console=cli.err_console,
                    disable=as_json,
                ) as bar:
                    tasks: dict[str, TaskID] = {}

                    def advance(table: str, rows: int) -> None:
                        if table not in tasks:
                            tasks[table] = bar.add_task(table, total=None)
                        bar.advance(tasks[table], rows)

                    report = await copy_database(source, target, progress=advance)
                counts = await count_rows(target)
                broken = await AuditLog(target).verify()
            finally:
                await target.close()
        finally:
            await source.close()
        return report, counts, broken

    report, counts, broken = run(cli, work())
    if counts != report.rows:
        fail(cli, f"the copy's row counts differ from the rows copied: {counts} against {report.rows}")
    if as_json:
        print_json(
            cli, {"source": report.source, "target": report.target, "rows": report.rows, "audit_intact": broken is None}
        )
    else:
        cli.console.print(
            f"Copied {sum(report.rows.values()):,} rows from {report.source} to {report.target}.", highlight=False
        )
        for table, rows in report.rows.items():
            cli.console.print(f"  {table:<20} {rows:>12,}", highlight=False)
        verdict = "intact" if broken is None else f"BROKEN at row {broken}"
        cli.console.print(f"Audit chain on the copy: {verdict}.", highlight=False)
    if broken is not None:
        raise typer.Exit(EXIT_BROKEN_CHAIN)


@app.command("serve-postgres")
def serve_postgres(
    ctx: typer.Context,
    folder: str = typer.Option(
        "data/postgres", "--dir", help="Where the server keeps its files (relative to the settings file's folder)."
    ),
    database: str = typer.Option("pumpops", "--database", help="The database to create (if missing) and print."),
) -> None:
    """Run a real PostgreSQL (pgserver's binaries, Unix socket only) until Ctrl-C, and print its Database.Url.

    For trying PumpOps on PostgreSQL without installing a server; a site runs its own.
    Example: pumpops db serve-postgres --dir data/postgres
    """
    cli = state(ctx)
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", database):
        fail(cli, f"--database {database!r} must be a plain lower-case name such as pumpops (letters, digits, _)")
    path = cli.settings().resolve(folder)
    run(cli, _serve_postgres(cli, path, database))


async def _serve_postgres(cli: CliState, path: Path, database: str) -> None:
    cli.err_console.print(f"starting PostgreSQL in {path} …", highlight=False)
    try:
        server = await asyncio.to_thread(start_postgres, path, database)
    except Exception as exc:  # pgserver's own errors: shown with what to check, never a traceback
        fail(cli, f"PostgreSQL could not start in {path}: {exc}. Check the folder is writable and not in use.")
    try:
        url = server.url(database)
        cli.console.print(url, highlight=False, markup=False, soft_wrap=True)
        cli.err_console.print(
            f"PostgreSQL {server.version} is running. In another terminal:\n"
            f"  export PUMPOPS_DATABASE__URL='{url}'\n"
            "  pumpops db init && pumpops chat\n"
            "Ctrl-C stops the server (its files stay in the folder for the next start).",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(number, stop.set)
        await stop.wait()
    finally:
        await asyncio.to_thread(server.stop)
        cli.err_console.print("PostgreSQL stopped", highlight=False)
