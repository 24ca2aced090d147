"""Alarm queries, and acknowledgement under an approval grant."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from governance import CheckedWrite, Grant, Precondition, PreconditionError, complete, redeem, refuse
from storage import Database, Row
from twin.errors import InvalidInputError, NotFoundError
from twin.identifiers import ALARM, exact_record_id, normalize_alarm_id, normalize_pump_id, trimmed_text
from twin.models import Severity
from twin.preconditions import Fetch, in_transaction

ACKNOWLEDGE_FUNCTION = "alarms-acknowledge_alarm"
MAX_NOTE = 500
MAX_ALARMS_LISTED = 50


class Alarm(BaseModel):
    """One alarm, naming its pump."""

    model_config = ConfigDict(frozen=True)
    alarm_id: str
    pump_id: str
    severity: Severity
    sensor_type: str | None
    message: str
    value: float | None
    raised_at: str
    active: bool
    acknowledged_at: str | None
    acknowledged_by: str | None


class AlarmList(BaseModel):
    """A capped list of alarms, most severe and most recent first."""

    model_config = ConfigDict(frozen=True)
    filters: dict[str, str | bool]
    count: int
    returned: int
    truncated: bool
    alarms: list[Alarm]


UNACKNOWLEDGED = "is active and not acknowledged"


async def require_unacknowledged(fetch: Fetch, alarm_id: str) -> Row:
    """The alarm row, if ``alarm_id`` (canonical) is still active and not acknowledged (what acknowledging assumes).

    Raises:
        NotFoundError: no alarm has that id.
        InvalidInputError: the alarm was cleared.
        PreconditionError: the alarm was acknowledged (the message says by whom and when).
    """
    row = await fetch(
        "SELECT pump_id, active, cleared_at, acknowledged_at, acknowledged_by FROM alarms WHERE alarm_id = ?",
        (alarm_id,),
    )
    if row is None:
        raise NotFoundError.alarm(alarm_id)
    if not row["active"]:
        raise _not_active(alarm_id, row["cleared_at"])
    if row["acknowledged_at"] is not None:
        raise PreconditionError(
            f"{alarm_id} was acknowledged by {row['acknowledged_by']} at {row['acknowledged_at']}; there is nothing "
            "to acknowledge. Tell the operator who acknowledged it."
        )
    return row


# A parameter tested for NULL is cast to its type: PostgreSQL cannot infer the type of a bare ``? IS NULL``.
_FILTER = (
    "(CAST(?1 AS TEXT) IS NULL OR severity = ?1) AND (CAST(?2 AS TEXT) IS NULL OR pump_id = ?2) "
    "AND (?3 = 0 OR active = 1)"
)


class AlarmService:
    """Read queries over alarms."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def list_alarms(
        self, severity: Severity | None = None, pump_id: str | None = None, active_only: bool = True
    ) -> AlarmList:
        """Alarms filtered by severity, pump and activity; most severe, then most recent first; capped."""
        pump = normalize_pump_id(pump_id) if pump_id is not None and pump_id.strip() else None
        params = (severity.value if severity is not None else None, pump, 1 if active_only else 0)
        filters: dict[str, str | bool] = {"active_only": active_only}
        if severity is not None:
            filters["severity"] = severity.value
        if pump is not None:
            filters["pump_id"] = pump
        count_row = await self._db.fetch_one("SELECT COUNT(*) AS n FROM alarms WHERE " + _FILTER, params)
        count = count_row["n"] if count_row else 0
        rows = await self._db.fetch_all(
            "SELECT * FROM alarms WHERE " + _FILTER + " ORDER BY "
            "CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END DESC, "
            "raised_at DESC, alarm_id LIMIT ?4",
            (*params, MAX_ALARMS_LISTED),
        )
        alarms = [alarm_from_row(row) for row in rows]
        return AlarmList(
            filters=filters, count=count, returned=len(alarms), truncated=count > len(alarms), alarms=alarms
        )

    async def get(self, alarm_id: str) -> Alarm:
        """One alarm, active or cleared.

        Raises:
            InvalidInputError: the value cannot be an alarm id.
            NotFoundError: no alarm has that id.
        """
        wanted = normalize_alarm_id(alarm_id)
        row = await self._db.fetch_one("SELECT * FROM alarms WHERE alarm_id = ?", (wanted,))
        if row is None:
            raise NotFoundError.alarm(alarm_id)
        return alarm_from_row(row)

    async def check_acknowledge(self, alarm_id: str, note: str) -> CheckedWrite:
        """Refuse what `acknowledge` would refuse now, without writing; `acknowledge` checks the same when it runs.

        Returns:
            ``alarm_id`` and ``note`` in the form `acknowledge` stores them, and the state acknowledging assumes.

            Its ``refusal`` says why `acknowledge` would refuse it now: an unknown, cleared or already
            acknowledged alarm.

        Raises:
            InvalidInputError: not an alarm id, or a bad note.
        """
        wanted, text = canonical_acknowledgement(alarm_id, note)
        try:
            await require_unacknowledged(self._db.fetch_one, wanted)
            refusal = None
        except (NotFoundError, InvalidInputError, PreconditionError) as exc:
            refusal = str(exc)
        preconditions = (Precondition(subject=wanted, expects=UNACKNOWLEDGED),)
        return CheckedWrite({"alarm_id": wanted, "note": text}, preconditions, refusal)

    async def acknowledge(self, alarm_id: str, note: str, grant: Grant | None) -> str:
        """Acknowledge an active, unacknowledged alarm under an approval grant; a replay returns the first result.

        When the state the approval assumed no longer holds (the alarm was acknowledged or cleared meanwhile)
        nothing is written: the approval is marked refused and audited in the write's transaction, and the
        refusal is returned.

        Raises:
            ApprovalRequiredError: no valid grant.
            InvalidInputError: a bad alarm id, or an empty or too long note.
        """
        wanted, text = canonical_acknowledgement(alarm_id, note)
        arguments = {"alarm_id": alarm_id, "note": note}
        async with self._db.transaction() as conn:
            first = await redeem(conn, grant, ACKNOWLEDGE_FUNCTION, arguments)
            if first is not None:
                return first
            assert grant is not None
            try:
                alarm = await require_unacknowledged(in_transaction(conn), wanted)
            except (NotFoundError, InvalidInputError, PreconditionError) as exc:
                return await refuse(conn, grant, str(exc))
            now = datetime.now(UTC).isoformat(timespec="seconds")
            await conn.execute(
                "UPDATE alarms SET acknowledged_at = ?, acknowledged_by = ?, acknowledgement_note = ? "
                "WHERE alarm_id = ?",
                (now, grant.approved_by, text, wanted),
            )
            result = json.dumps(
                {
                    "status": "executed",
                    "alarm_id": wanted,
                    "pump_id": alarm["pump_id"],
                    "acknowledged_at": now,
                    "approval_id": grant.approval_id,
                },
                separators=(",", ":"),
            )
            await complete(conn, grant, result)
        return result


def canonical_acknowledgement(alarm_id: str, note: str) -> tuple[str, str]:
    """The alarm id and note as an acknowledgement stores them: the one validation of proposal and `acknowledge`.

    Raises:
        InvalidInputError: not an alarm id written as one (`exact_record_id`), or a note outside 1-500 characters.
    """
    return exact_record_id(alarm_id, ALARM, name="alarm_id", listing="alarms-list_alarms"), _check_note(note)


def _check_note(note: str) -> str:
    """The trimmed note.

    Raises:
        InvalidInputError: empty or too long.
    """
    return trimmed_text(note, name="note", minimum=1, maximum=MAX_NOTE, example="Crew dispatched; bearing check")


def _not_active(alarm_id: str, cleared_at: str | None) -> InvalidInputError:
    when = f" (cleared at {cleared_at})" if cleared_at else ""
    return InvalidInputError(f"Alarm {alarm_id} is no longer active{when}; there is nothing to acknowledge.")


def alarm_from_row(row: Any) -> Alarm:
    """An `Alarm` from a row of the ``alarms`` table (selected with the columns of that name)."""
    return Alarm(
        alarm_id=row["alarm_id"],
        pump_id=row["pump_id"],
        severity=Severity(row["severity"]),
        sensor_type=row["sensor_type"],
        message=row["message"],
        value=row["value"],
        raised_at=row["raised_at"],
        active=bool(row["active"]),
        acknowledged_at=row["acknowledged_at"],
        acknowledged_by=row["acknowledged_by"],
    )
