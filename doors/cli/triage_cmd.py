"""`pumpops triage`: assess one alarm with the agent (`ALARM-ID`), triage each new alarm (`--watch`), list results."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

import httpx
import typer

from doors.auto_triage import EXISTED_BEFORE, AutoTriage, TriageLog, TriageRecord
from doors.cli.chat_render import TurnRenderer
from doors.cli.common import ASSERTED_HELP, CliState, caller, fail, print_json, run, state
from doors.cli.safe_text import safe_text
from doors.triage import TriageResult, Urgency, read_alarm, triage_alarm
from governance.identity import CallContext
from kernel_setup.app import open_app
from turn.factory import check_model

EXIT_NO_ANSWER = 4
DEFAULT_LIST = 50


def triage_command(
    ctx: typer.Context,
    alarm_id: str | None = typer.Argument(None, help="The alarm to assess, e.g. ALM-0001."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON only (the triage result, or the records)."),
    asserted: str | None = typer.Option(None, "--as", help=ASSERTED_HELP),
    watch: bool = typer.Option(
        False, "--watch", help="Triage each new alarm as it is raised (the Triage settings), until Ctrl-C."
    ),
    list_records: bool = typer.Option(False, "--list", help="List the automatic triage records, newest first."),
    limit: int = typer.Option(DEFAULT_LIST, "--limit", min=1, max=10_000, help="How many records --list shows."),
) -> None:
    """Assess an alarm in context (pump, history, trend, manuals) and give its urgency with the evidence.

    Urgency: immediate, within 24 h, next planned maintenance or no action (unknown when not stated).

    --watch triages each newly raised alarm (from telemetry or an import) within Triage.MaxPerMinute, stores the
    result and sends it to the Triage sinks (file, stdout, MQTT, webhook); alarms that existed before its first
    run are recorded as skipped. Writes it proposes are parked for approval. Ctrl-C or SIGTERM stops it.

    Examples:
      pumpops triage ALM-0001 --json
      pumpops triage --watch
      pumpops triage --list --limit 20
      pumpops triage --list --json
    """
    cli = state(ctx)
    modes = sum((alarm_id is not None, watch, list_records))
    if modes != 1:
        fail(cli, "give one of: an alarm id (pumpops triage ALM-0001), --watch, or --list")
    if list_records:
        records = run(cli, latest_records(cli, limit))
        if as_json:
            print_json(cli, [r.model_dump(mode="json") for r in records])
        else:
            show_records(cli, records)
        return
    if watch:
        if as_json:
            fail(cli, "--watch prints progress, not JSON; set Triage.Stdout to true for JSON lines on stdout")
        run(cli, watch_alarms(cli))
        return
    assert alarm_id is not None
    who = caller(cli, "triage", asserted)
    result = run(cli, triage(cli, alarm_id, as_json=as_json, principal=who))
    if as_json:
        print_json(cli, result.model_dump(mode="json"))
    if result.turn.degraded and not result.turn.answer.strip():
        raise typer.Exit(EXIT_NO_ANSWER)


async def triage(
    cli: CliState,
    alarm_id: str,
    *,
    as_json: bool,
    principal: CallContext,
    transport: httpx.AsyncBaseTransport | None = None,
) -> TriageResult:
    """Open the app, check the alarm then the model, and run the triage turn (streamed unless ``as_json``).

    ``transport`` replaces the HTTP transport to Ollama (tests pass a scripted fake).
    """
    async with open_app(cli.settings(), chat_transport=transport) as app:
        alarm = await read_alarm(app, alarm_id)  # an unknown id fails before the model is needed
        await check_model(app)
        if as_json:
            return await triage_alarm(app, alarm.alarm_id, principal=principal)
        cli.err_console.print(
            f"[bold]triage {safe_text(alarm.alarm_id)}[/] · {safe_text(alarm.pump_id)} · {alarm.severity.value} "
            f"{safe_text(alarm.sensor_type or 'equipment')} alarm · raised {safe_text(alarm.raised_at)}"
            f"{'' if alarm.active else ' (cleared)'}",
            highlight=False,
        )
        renderer = TurnRenderer(cli.console, cli.err_console)
        result = await triage_alarm(app, alarm.alarm_id, principal=principal, on_event=renderer.render)
        colour = "yellow" if result.urgency is Urgency.UNKNOWN else "bold"
        cli.console.print(f"[{colour}]urgency: {result.urgency.value}[/]", highlight=False)
        return result


async def latest_records(cli: CliState, limit: int) -> list[TriageRecord]:
    """The newest ``limit`` automatic triage records."""
    async with open_app(cli.settings()) as app:
        return await TriageLog(app.db).latest(limit)


def show_records(cli: CliState, records: list[TriageRecord]) -> None:
    """One line per record (alarm, status, urgency, batch, reason); stored text printed exactly as stored."""
    if not records:
        cli.err_console.print("no automatic triage records yet (pumpops triage --watch records them)")
    for r in records:
        urgency = f" · urgency {r.urgency.value}" if r.urgency is not None else ""
        batch = f" · {safe_text(r.batch_id)}" if r.batch_id else ""
        reason = f" · {safe_text(r.reason)}" if r.reason else ""
        approvals = r.result.approval_ids if r.result is not None else []
        parked = f" · parked {', '.join(safe_text(a) for a in approvals)}" if approvals else ""
        cli.console.print(
            f"{safe_text(r.recorded_at)} [bold]{safe_text(r.alarm_id)}[/] {r.status.value}{urgency}{batch}"
            f"{parked}{reason}",
            highlight=False,
        )


async def watch_alarms(cli: CliState, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
    """Run automatic triage until Ctrl-C or SIGTERM; one progress line per record on stderr.

    ``transport`` replaces the HTTP transport to Ollama (tests pass a scripted fake).
    """
    settings = cli.settings()
    async with open_app(settings, chat_transport=transport) as app:
        await check_model(app)
        triage = AutoTriage(app, settings.triage, on_record=lambda record: _progress(cli, record))
        sinks = ", ".join(s.name for s in triage.sinks) or "none (records are stored only)"
        cli.err_console.print(
            f"watching for new alarms · at most {settings.triage.max_per_minute} triages a minute · sinks: {sinks}"
            " · Ctrl-C stops",
            highlight=False,
        )
        if not await TriageLog(app.db).latest(1):
            cli.err_console.print(
                "first run: the alarms already stored are recorded as history (skipped), not triaged", highlight=False
            )
        task = asyncio.create_task(triage.run())
        with _cancel_on_signals(task):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        cli.err_console.print("stopped watching", highlight=False)


def _progress(cli: CliState, record: TriageRecord) -> None:
    if record.reason == EXISTED_BEFORE:
        return  # history: announced once when watching starts
    urgency = f" · urgency {record.urgency.value}" if record.urgency is not None else ""
    reason = f": {safe_text(record.reason)}" if record.reason else ""
    cli.err_console.print(f"{safe_text(record.alarm_id)} {record.status.value}{urgency}{reason}", highlight=False)


@contextlib.contextmanager
def _cancel_on_signals(task: asyncio.Task[None]) -> Iterator[None]:
    """While inside, SIGINT (Ctrl-C) and SIGTERM cancel ``task``; where the loop cannot own them, nothing changes."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, task.cancel)
        except (NotImplementedError, RuntimeError, ValueError):
            continue
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
