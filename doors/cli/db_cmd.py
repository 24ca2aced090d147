"""`pumpops db`: create and load the registry, import a plant from files, grow a synthetic fleet."""

from __future__ import annotations

from dataclasses import asdict

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from doors.cli import import_cmd
from doors.cli.common import print_json, run, state
from storage import Database
from twin.generator import GenerationReport, generate_fleet
from twin.sample_fleet import load_sample_fleet

app = typer.Typer(help="Create, load, import and grow the asset registry.", no_args_is_help=True)
app.command("import")(import_cmd.import_command)


@app.command("init")
def init(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON for machines.")) -> None:
    """Create and migrate the database and load the sample fleet if it is empty (safe to repeat).

    Example: pumpops db init
    """
    cli = state(ctx)
    settings = cli.settings()

    async def work() -> tuple[bool, int]:
        db = await Database.open(settings.database_target)
        try:
            loaded = await load_sample_fleet(db)
            row = await db.fetch_one("SELECT COUNT(*) AS n FROM pumps")
            return loaded, row["n"] if row else 0
        finally:
            await db.close()

    loaded, pumps = run(cli, work())
    if as_json:
        print_json(cli, {"database": settings.database_description, "sample_loaded": loaded, "pumps": pumps})
        return
    what = "loaded the sample fleet" if loaded else "already initialised; nothing loaded"
    cli.console.print(f"Database {settings.database_description}: {what} ({pumps} pumps).", highlight=False)


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
        db = await Database.open(settings.database_target)
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
