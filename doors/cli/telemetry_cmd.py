"""`pumpops telemetry`: read the plant's live values (OPC UA, MQTT), raise alarms, triage them; and its status."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from datetime import UTC, datetime
from pathlib import Path

import httpx
import typer
from rich.table import Table

from chat.factory import ModelUnavailableError
from doors.auto_triage import AutoTriage, TriageAlreadyRunning, TriageLease
from doors.cli.common import CliState, fail, print_json, run, state
from doors.cli.safe_text import safe_text
from kernel_setup.app import AppContext, open_app
from storage import open_database
from telemetry.service import ServiceCounts, TelemetryService
from telemetry.status import SourceRecord, read_statuses
from turn.factory import check_model
from twin.timestamps import parse_ts

app = typer.Typer(
    help=(
        "Read the plant's live values from the configured OPC UA and MQTT sources (read-only to the plant), raise "
        "alarms from them and triage each new one, until Ctrl-C or SIGTERM. `status` shows each source. "
        "Example: pumpops telemetry --no-triage"
    ),
    no_args_is_help=False,
    invoke_without_command=True,
)

NO_SOURCES = (
    "no telemetry source is configured: add an entry to Telemetry.OpcUa or Telemetry.Mqtt in appsettings.json "
    "(README, 'Connecting your plant'), or try the example plant's simulator: pumpops simulate --help"
)


@app.callback(invoke_without_command=True)
def telemetry_command(
    ctx: typer.Context,
    triage: bool | None = typer.Option(
        None,
        "--triage/--no-triage",
        help="Triage each new alarm automatically alongside (default: the Triage.Automatic setting).",
    ),
) -> None:
    """Run until Ctrl-C or SIGTERM: store each source's readings in batches, raise and clear alarms, triage them.

    A failing source reconnects with backoff while the others go on; `pumpops telemetry status` shows each one.
    Stopping writes what is held before exiting.
    Example: pumpops telemetry --no-triage
    """
    if ctx.invoked_subcommand is not None:
        return
    cli = state(ctx)
    settings = cli.settings()
    if not settings.telemetry.mqtt and not settings.telemetry.opc_ua:
        fail(cli, NO_SOURCES)
    counts = run(cli, serve(cli, triage=settings.triage.automatic if triage is None else triage))
    cli.err_console.print(
        f"stopped: {counts.stored} readings stored, {counts.duplicates} duplicates dropped, "
        f"{counts.unknown} for sensors the registry lacks, {counts.alarms_raised} alarms raised",
        highlight=False,
    )


@app.command("status")
def status_command(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the sources as JSON."),
) -> None:
    """Show each source as the service last recorded it: state, counters, last value, why it failed, refused nodes.

    Example: pumpops telemetry status --json
    """
    cli = state(ctx)
    settings = cli.settings()
    records = run(cli, _statuses(settings.database_target))
    configured = [s.name for s in settings.telemetry.opc_ua] + [s.name for s in settings.telemetry.mqtt]
    recorded = {r.name for r in records}
    never = [name for name in configured if name not in recorded]
    if as_json:
        print_json(cli, {"sources": [r.model_dump() for r in records], "never_run": never})
        return
    if not records and not never:
        cli.console.print(NO_SOURCES, highlight=False)
        return
    table = Table("source", "kind", "state", "received", "malformed", "last value at", "updated", "detail")
    for r in records:
        colour = {"connected": "green", "failed": "red", "connecting": "yellow"}.get(r.state.value, "")
        table.add_row(
            safe_text(r.name),
            r.kind,
            f"[{colour}]{r.state.value}[/]" if colour else r.state.value,
            str(r.received),
            str(r.malformed),
            r.last_value_at or "-",
            _ago(r.updated_at),
            safe_text(_detail(r)),
        )
    for name in never:
        table.add_row(safe_text(name), "", "never run", "", "", "", "", "configured; the service has not read it yet")
    cli.console.print(table)


async def _statuses(target: str | Path) -> list[SourceRecord]:
    db = await open_database(target)
    try:
        return await read_statuses(db)
    finally:
        await db.close()


async def serve(
    cli: CliState,
    *,
    triage: bool,
    transport: httpx.AsyncBaseTransport | None = None,
    stop: asyncio.Event | None = None,
) -> ServiceCounts:
    """Run the service (and automatic triage when asked) until ``stop`` is set or Ctrl-C / SIGTERM arrives.

    ``transport`` replaces the HTTP transport to Ollama and ``stop`` the signals (tests).
    """
    settings = cli.settings()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this platform, or not main thread
            loop.add_signal_handler(number, stop.set)
    async with open_app(settings, chat_transport=transport) as app:

        async def raised(alarm_ids: list[str]) -> None:
            for alarm_id in alarm_ids:
                alarm = await app.alarms.get(alarm_id)
                cli.err_console.print(
                    f"[bold red]alarm {safe_text(alarm.alarm_id)}[/] {safe_text(alarm.pump_id)} "
                    f"{alarm.severity.value}: {safe_text(alarm.message)}",
                    highlight=False,
                )

        service = TelemetryService(app.db, settings.telemetry, settings.alarms, on_raised=raised)
        for source in service.sources:
            cli.err_console.print(f"reading {safe_text(source.name)} ({source.kind})", highlight=False)
        for opc_ua in settings.telemetry.opc_ua:
            if opc_ua.sampling_interval_ms < 1000:  # the registry keys a reading on its sensor and second
                cli.err_console.print(
                    f"[yellow]note: {safe_text(opc_ua.name)} samples every {opc_ua.sampling_interval_ms} ms, but "
                    "readings are stored one per sensor and second: the later values of each second are dropped "
                    "as repeats (SamplingIntervalMs 1000 or more keeps every value)[/]",
                    highlight=False,
                )
        triaging = await _start_triage(cli, app) if triage else None
        cli.err_console.print("Ctrl-C or SIGTERM stops (what is held is written first).", highlight=False)
        try:
            return await service.run(stop)
        finally:
            if triaging is not None:
                triaging.cancel()
                await asyncio.gather(triaging, return_exceptions=True)
            for number in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(number)


async def _start_triage(cli: CliState, app: AppContext) -> asyncio.Task[None] | None:
    """Start automatic triage, or say why it cannot run (no model) and go on without it."""
    try:
        await check_model(app)
    except ModelUnavailableError as exc:
        cli.err_console.print(
            f"[yellow]automatic triage is off: {safe_text(str(exc))}[/] New alarms stay untriaged until "
            "`pumpops triage --watch` runs with a model.",
            highlight=False,
        )
        return None
    triage = app.settings.triage
    lease = TriageLease(app.settings.database_target)
    try:
        await lease.acquire()  # checked here so the refusal is said at start; `run` takes the lease again for itself
    except TriageAlreadyRunning as exc:
        cli.err_console.print(f"[yellow]automatic triage is off here: {safe_text(str(exc))}[/]", highlight=False)
        return None
    await lease.release()
    cli.err_console.print("triaging each new alarm automatically", highlight=False)
    return asyncio.create_task(_triage(cli, AutoTriage(app, triage)), name="auto-triage")


async def _triage(cli: CliState, dispatcher: AutoTriage) -> None:
    try:
        await dispatcher.run()
    except TriageAlreadyRunning as exc:  # taken between the check and the start
        cli.err_console.print(f"[yellow]automatic triage is off here: {safe_text(str(exc))}[/]", highlight=False)


def _detail(record: SourceRecord) -> str:
    """Why the source failed, and what its server refused (nodes it lacks), on one line."""
    parts = [record.detail] if record.detail else []
    if record.refused:
        parts.append(f"{len(record.refused)} node(s) refused: {', '.join(record.refused)}")
    return "; ".join(parts)


def _ago(stamp: str) -> str:
    try:
        seconds = (datetime.now(UTC) - parse_ts(stamp)).total_seconds()
    except ValueError:
        return stamp
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return stamp
