"""Alarm triage: one agent turn that assesses an alarm in context and states how urgent it is.

The door for automation: `pumpops triage ALARM-ID` and, for an alarm-event hook,
``await triage_alarm(app, "ALM-0001")``. The alarm is read directly first, so an unknown id fails
before any model call; the prompt is built in code from the alarm's structured fields only (its
free-text message reaches the model through `alarms-list_alarms`, fenced as untrusted tool data).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum

from pydantic import BaseModel

from core.errors import PumpOpsError
from governance.identity import CallContext
from governance.roles import Proof
from kernel_setup.app import AppContext
from turn.events import TurnEvent, TurnFinished, TurnResult
from turn.factory import runner_for
from twin.alarms import Alarm

AUTOMATION_PRINCIPAL = "automation:triage"
AUTOMATION = CallContext(principal=AUTOMATION_PRINCIPAL, door="triage", proof=Proof.SERVICE)
"""Automatic triage acting on its own: a service, no person, so no role counts (its writes wait for a supervisor)."""
TREND_DAYS = 30


class Urgency(str, Enum):
    """How soon someone must act on an alarm; ``unknown`` when the answer did not say."""

    IMMEDIATE = "immediate"
    WITHIN_24_H = "within 24 h"
    NEXT_PLANNED_MAINTENANCE = "next planned maintenance"
    NO_ACTION = "no action"
    UNKNOWN = "unknown"


class TriageResult(BaseModel):
    """The alarm as stored, the urgency read from the answer, and the whole turn."""

    alarm: Alarm
    urgency: Urgency
    turn: TurnResult


class UnknownAlarmError(PumpOpsError):
    """No alarm has the id given."""


_URGENCY_LINE = re.compile(
    r"urgency\W{0,8}(immediate|within\s*24\s*h(?:ours?|rs?)?|next\s+planned\s+maintenance|no\s+action)(?![a-z])",
    re.IGNORECASE,
)


async def triage_alarm(
    app: AppContext,
    alarm_id: str,
    *,
    principal: CallContext = AUTOMATION,
    on_event: Callable[[TurnEvent], None] | None = None,
) -> TriageResult:
    """Assess one alarm with the agent and return its urgency with the evidence (the turn).

    Args:
        app: An open app (``async with open_app(settings) as app``).
        alarm_id: The alarm, e.g. ``"ALM-0001"`` (trimmed and upper-cased).
        principal: Who is asking, recorded in the audit trail: automation by default, or a local door's caller.
        on_event: Called with every turn event as it happens (e.g. to stream to a terminal).

    Returns:
        The alarm, the urgency parsed from the answer's ``URGENCY:`` line (``unknown`` when absent)
        and the turn result.

    Raises:
        UnknownAlarmError: no alarm has that id.
        ChatServiceError: the model service failed.
    """
    alarm = await read_alarm(app, alarm_id)
    result: TurnResult | None = None
    async for event in runner_for(app).stream(triage_prompt(alarm), principal=principal):
        if on_event is not None:
            on_event(event)
        if isinstance(event, TurnFinished):
            result = event.result
    assert result is not None  # the runner always ends with TurnFinished
    return TriageResult(alarm=alarm, urgency=parse_urgency(result.answer), turn=result)


async def read_alarm(app: AppContext, alarm_id: str) -> Alarm:
    """The stored alarm with this id.

    Raises:
        UnknownAlarmError: the id names no alarm; the message says how to list them.
    """
    try:
        return await app.alarms.get(alarm_id)
    except PumpOpsError as exc:
        raise UnknownAlarmError(str(exc)) from exc


def triage_prompt(alarm: Alarm) -> str:
    """The triage question for one alarm, naming the tools that gather its context."""
    sensor = alarm.sensor_type
    value = f" at value {alarm.value:g}" if alarm.value is not None else ""
    state = "active" if alarm.active else "cleared"
    steps = [
        f'assets-get_pump_details with pump_id "{alarm.pump_id}" (machine class, latest readings against '
        "their thresholds, ISO 10816-3 zone, other active alarms)",
        f'alarms-list_alarms with pump_id "{alarm.pump_id}" and active_only false (this alarm\'s message and '
        "the pump's alarm history: is this the first alarm or part of a pattern?)",
    ]
    if sensor:
        steps.append(
            f'sensors-get_sensor_trend with pump_id "{alarm.pump_id}", sensor_type "{sensor}" and days '
            f"{TREND_DAYS} (is it getting worse, and when would it cross its alarm threshold?)"
        )
    steps.append(
        "docs-search_documentation with a question about this failure mode and the response the manuals "
        "prescribe (cite the manual title and section)"
    )
    numbered = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, start=1))
    choices = ", ".join(u.value for u in Urgency if u is not Urgency.UNKNOWN)
    return (
        f"Triage alarm {alarm.alarm_id}: {alarm.severity.value} {sensor or 'equipment'} alarm on pump "
        f"{alarm.pump_id}{value}, raised {alarm.raised_at}, {state}.\n"
        f"Assess it in context before judging. Call these tools:\n{numbered}\n"
        f"Then give an urgency assessment, exactly one of: {choices}. Support it with the evidence: quote the "
        "numbers exactly as the tools returned them and cite the manual sections you rely on. Say what to do "
        "next; if maintenance work is needed, you may propose a work order with work_orders-create_work_order "
        "(a supervisor approves it). End with one line of the form:\nURGENCY: <one of the choices above>"
    )


def parse_urgency(answer: str) -> Urgency:
    """The urgency the answer states on its ``URGENCY:`` line (the last one), or ``unknown``."""
    matches = _URGENCY_LINE.findall(answer)
    if not matches:
        return Urgency.UNKNOWN
    word = " ".join(matches[-1].lower().split())
    if word.startswith("within"):
        return Urgency.WITHIN_24_H
    return Urgency(word)
