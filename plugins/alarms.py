"""The `alarms` plugin: alarm lists by severity, pump and activity."""

from __future__ import annotations

from typing import Annotated

from semantic_kernel.functions import kernel_function

from governance import CheckedWrite, active_grant
from plugins.declarations import reads, writes
from plugins.results import to_json
from twin import AlarmService, Severity


class AlarmsPlugin:
    """Thin kernel-function adapter over `AlarmService`."""

    def __init__(self, service: AlarmService) -> None:
        self._service = service

    @reads
    @kernel_function(
        name="list_alarms",
        description=(
            "Returns alarms (id, pump id, severity, message, value, raised time, acknowledgement), most severe and "
            "most recent first, at most 50, with the total count. Use it for questions about alarms, an alarm's "
            "history on one pump, or whether a problem is recurring. By default only active alarms."
        ),
    )
    async def list_alarms(
        self,
        severity: Annotated[Severity | None, "Only alarms of this severity, e.g. 'critical'. Omit for all."] = None,
        pump_id: Annotated[str | None, "Only alarms of this pump, e.g. 'PUMP-007'. Omit for every pump."] = None,
        active_only: Annotated[
            bool, "Only active alarms, e.g. true (the default); false also returns cleared history."
        ] = True,
    ) -> str:
        """Filtered alarm list as JSON."""
        return to_json(await self._service.list_alarms(severity=severity, pump_id=pump_id, active_only=active_only))

    @writes(
        idempotent=True,
        destructive=False,
        # An acknowledged alarm stops demanding attention: acknowledged by mistake, a real hazard goes unseen.
        safety_relevant=True,
        check="check_acknowledge_alarm",
        asked_by=("acknowledg", "ack", "handl", "dealt with", "dealing with", "on the way", "on site"),
    )
    @kernel_function(
        name="acknowledge_alarm",
        description=(
            "Returns {status: pending_approval, approval_id} — proposes acknowledging one active alarm with a note; "
            "a human supervisor must approve it before the alarm is marked acknowledged. Use it when the operator "
            "says an alarm is being handled. Does not clear the alarm or touch equipment."
        ),
    )
    async def acknowledge_alarm(
        self,
        alarm_id: Annotated[str, "Exact alarm identifier, e.g. 'ALM-0001'."],
        note: Annotated[
            str, "What is being done about it, 1-500 characters, e.g. 'Crew dispatched; bearing check under way'."
        ],
    ) -> str:
        """Acknowledge an alarm (runs only under an approval grant)."""
        return await self._service.acknowledge(alarm_id, note, active_grant())

    async def check_acknowledge_alarm(self, alarm_id: str, note: str) -> CheckedWrite:
        """Raise what `acknowledge_alarm` would for this input now; no write.

        It refuses an unknown, cleared or already acknowledged alarm, and a bad note.

        Returns the alarm id and note in canonical form, and the state acknowledging assumes.
        """
        return await self._service.check_acknowledge(alarm_id, note)
