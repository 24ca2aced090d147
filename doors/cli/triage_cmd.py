"""`pumpops triage ALARM-ID`: assess one alarm with the agent and state its urgency."""

from __future__ import annotations

import httpx
import typer

from doors.cli.chat_render import TurnRenderer
from doors.cli.common import CliState, checked_principal, print_json, run, state
from doors.cli.safe_text import safe_text
from doors.triage import AUTOMATION_PRINCIPAL, TriageResult, Urgency, read_alarm, triage_alarm
from kernel_setup.app import open_app
from turn.factory import check_model

EXIT_NO_ANSWER = 4


def triage_command(
    ctx: typer.Context,
    alarm_id: str = typer.Argument(..., help="The alarm to assess, e.g. ALM-0001."),
    as_json: bool = typer.Option(False, "--json", help="Print the triage result JSON only."),
    principal: str = typer.Option(AUTOMATION_PRINCIPAL, "--as", help="Who is asking (recorded in the audit trail)."),
) -> None:
    """Assess an alarm in context (pump, history, trend, manuals) and give its urgency with the evidence.

    Urgency: immediate, within 24 h, next planned maintenance or no action (unknown when not stated).
    Example: pumpops triage ALM-0001 --json
    """
    cli = state(ctx)
    name = checked_principal(cli, principal)
    result = run(cli, triage(cli, alarm_id, as_json=as_json, principal=name))
    if as_json:
        print_json(cli, result.model_dump(mode="json"))
    if result.turn.degraded and not result.turn.answer.strip():
        raise typer.Exit(EXIT_NO_ANSWER)


async def triage(
    cli: CliState,
    alarm_id: str,
    *,
    as_json: bool,
    principal: str,
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
