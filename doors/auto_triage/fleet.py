"""The fleet-level triage turn: one assessment covering a flood of alarms that the per-minute budget cannot take.

Like `doors.triage.triage_prompt`, the prompt is built in code from the alarms' structured fields only; their
free-text messages reach the model through `alarms-list_alarms`, fenced as untrusted tool data.
"""

from __future__ import annotations

import secrets
from collections import Counter

from doors.triage import Urgency
from twin.alarms import Alarm

MAX_BATCH = 100
"""At most this many alarms go into one fleet-level turn; the rest wait for the next one."""
MAX_DETAILED_PUMPS = 5


def new_batch_id() -> str:
    """A fresh batch id, e.g. ``BATCH-3F9A12C0``."""
    return f"BATCH-{secrets.token_hex(4).upper()}"


def fleet_prompt(alarms: list[Alarm]) -> str:
    """The triage question for several alarms at once, asking for one urgency for the batch as a whole."""
    pumps = Counter(alarm.pump_id for alarm in alarms)
    lines = "\n".join(_line(alarm) for alarm in alarms)
    worst = sorted(pumps, key=lambda pump: (-_worst_rank(alarms, pump), pump))[:MAX_DETAILED_PUMPS]
    detailed = ", ".join(f'"{pump}"' for pump in worst)
    choices = ", ".join(u.value for u in Urgency if u is not Urgency.UNKNOWN)
    return (
        f"Fleet triage: {len(alarms)} new alarms on {len(pumps)} pumps were raised together, more than can be "
        f"triaged one by one. The alarms:\n{lines}\n"
        "Assess them together before judging. Call these tools:\n"
        "1. assets-get_system_summary (the fleet's state: which pumps run, how many alarms are active)\n"
        "2. alarms-list_alarms with active_only true (the alarms' messages: is there a common cause such as a "
        "power dip, a process upset or a sensor or communication fault?)\n"
        f"3. assets-get_pump_details for the pumps with the most severe alarms: {detailed}\n"
        "Then give one urgency assessment for the batch as a whole (the most urgent any alarm in it needs), "
        f"exactly one of: {choices}. Name the pumps that need someone first and say whether the alarms share a "
        "cause. Quote the numbers exactly as the tools returned them. Where maintenance work is needed, you may "
        "propose a work order with work_orders-create_work_order (a supervisor approves it). End with one line of "
        "the form:\n"
        "URGENCY: <one of the choices above>"
    )


def _line(alarm: Alarm) -> str:
    value = f" at value {alarm.value:g}" if alarm.value is not None else ""
    return (
        f"- {alarm.alarm_id}: {alarm.severity.value} {alarm.sensor_type or 'equipment'} alarm on pump "
        f"{alarm.pump_id}{value}, raised {alarm.raised_at}"
    )


def _worst_rank(alarms: list[Alarm], pump: str) -> int:
    return max(alarm.severity.rank for alarm in alarms if alarm.pump_id == pump)
