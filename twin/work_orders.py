"""Work orders: proposed by the model, created only under an approval grant, listed for follow-up."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import Enum

from pydantic import BaseModel, ConfigDict

from governance import CheckedWrite, Grant, Precondition, PreconditionError, complete, redeem, refuse
from storage import Database
from storage.bulk import dialect_of
from twin.errors import NotFoundError
from twin.identifiers import PUMP, exact_record_id, normalize_pump_id, trimmed_text
from twin.preconditions import Fetch, in_transaction, pump_in_service, require_pump_in_service

MAX_WORK_ORDERS_LISTED = 50
MIN_SUMMARY = 5
MAX_SUMMARY = 500
CREATE_FUNCTION = "work_orders-create_work_order"


class Priority(str, Enum):
    """How soon the work must happen."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    URGENT = "urgent"


class WorkOrderStatus(str, Enum):
    """Where a work order stands."""

    OPEN = "open"
    IN_PROGRESS = "in_progress"
    CLOSED = "closed"


class WorkOrder(BaseModel):
    """One work order, naming its pump and the approval it came from."""

    model_config = ConfigDict(frozen=True)
    work_order_id: str
    pump_id: str
    priority: Priority
    summary: str
    status: WorkOrderStatus
    created_at: str
    requested_by: str
    approved_by: str | None
    approval_id: str | None


class WorkOrderList(BaseModel):
    """A capped list of work orders, newest first."""

    model_config = ConfigDict(frozen=True)
    filters: dict[str, str]
    count: int
    returned: int
    truncated: bool
    work_orders: list[WorkOrder]


def check_summary(summary: str) -> str:
    """A trimmed summary of acceptable length.

    Raises:
        InvalidInputError: too short or too long.
    """
    return trimmed_text(
        summary,
        name="summary",
        minimum=MIN_SUMMARY,
        maximum=MAX_SUMMARY,
        example="Grease the bearings",
        describing=" describing the work",
    )


def canonical_order(pump_id: str, summary: str) -> tuple[str, str]:
    """The pump id and summary in the form a work order stores them: the one validation of a proposal and `create`.

    Raises:
        InvalidInputError: not a pump id written as one (`exact_record_id`), or a summary outside 5-500 characters.
    """
    pump = exact_record_id(pump_id, PUMP, name="pump_id", listing="assets-list_pumps")
    return pump, check_summary(summary)


def order_preconditions(pump_id: str, summary: str) -> tuple[Precondition, ...]:
    """The state a work order for ``pump_id`` with ``summary`` (both canonical) assumes."""
    return (
        pump_in_service(pump_id),
        Precondition(subject=pump_id, expects=f"has no open work order with the summary {summary!r}"),
    )


async def require_order_state(fetch: Fetch, pump_id: str, summary: str) -> None:
    """Refuse a work order whose preconditions (`order_preconditions`) do not hold now.

    Raises:
        NotFoundError: unknown pump.
        PreconditionError: the pump is decommissioned, or an open work order for it has the same summary.
    """
    await require_pump_in_service(fetch, pump_id)
    open_order = await fetch(
        "SELECT work_order_id, status, created_at, requested_by FROM work_orders "
        "WHERE pump_id = ? AND status IN ('open', 'in_progress') AND LOWER(summary) = LOWER(?) "
        "ORDER BY created_at, work_order_id LIMIT 1",
        (pump_id, summary),
    )
    if open_order is not None:
        raise PreconditionError(
            f"{pump_id} already has {open_order['status'].replace('_', ' ')} work order {open_order['work_order_id']} "
            f"with this summary (created at {open_order['created_at']}, requested by {open_order['requested_by']}); "
            "a second one would duplicate it. Call work_orders-list_work_orders to follow that one up."
        )


class WorkOrderService:
    """Creates work orders under a grant and lists them."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def check(self, pump_id: str, summary: str) -> CheckedWrite:
        """Refuse what `create` would refuse now, without writing; `create` checks the same again when it runs.

        Returns:
            ``pump_id`` and ``summary`` in the form `create` stores them, and the state the work order assumes.

            Its ``refusal`` says why `create` would refuse it now: an unknown or decommissioned pump, or the same
            work already open for the pump.

        Raises:
            InvalidInputError: not a pump id, or a bad summary.
        """
        pump, text = canonical_order(pump_id, summary)
        try:
            await require_order_state(self._db.fetch_one, pump, text)
            refusal = None
        except (NotFoundError, PreconditionError) as exc:
            refusal = str(exc)
        return CheckedWrite({"pump_id": pump, "summary": text}, order_preconditions(pump, text), refusal)

    async def create(self, pump_id: str, priority: Priority, summary: str, grant: Grant | None) -> str:
        """Create one work order under an approval grant; a replay returns the first result.

        The work order, the approval's executed state, the idempotency record and (through the
        grant's hook) the audit row commit in one transaction. When the state the approval assumed no
        longer holds (an unknown or decommissioned pump, the same work already open) nothing is written:
        the approval is marked refused and audited in that transaction, and the refusal is returned.

        Raises:
            ApprovalRequiredError: no valid grant.
            InvalidInputError: bad pump id or summary.
        """
        pump, text = canonical_order(pump_id, summary)
        arguments = {"pump_id": pump_id, "priority": priority.value, "summary": summary}
        async with self._db.transaction() as conn:
            first = await redeem(conn, grant, CREATE_FUNCTION, arguments)
            if first is not None:
                return first
            assert grant is not None
            try:
                await require_order_state(in_transaction(conn), pump, text)
            except (NotFoundError, PreconditionError) as exc:
                return await refuse(conn, grant, str(exc))
            async with conn.execute(dialect_of(conn).max_number_query("work_orders", "work_order_id", "WO-")) as cursor:
                row = await cursor.fetchone()
            work_order_id = f"WO-{((row[0] if row else None) or 0) + 1:04d}"
            created_at = datetime.now(UTC).isoformat(timespec="seconds")
            await conn.execute(
                "INSERT INTO work_orders (work_order_id, pump_id, priority, summary, status, created_at, "
                "requested_by, approved_by, approval_id) VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?)",
                (
                    work_order_id,
                    pump,
                    priority.value,
                    text,
                    created_at,
                    grant.requested_by,
                    grant.approved_by,
                    grant.approval_id,
                ),
            )
            result = json.dumps(
                {
                    "status": "executed",
                    "work_order_id": work_order_id,
                    "pump_id": pump,
                    "priority": priority.value,
                    "approval_id": grant.approval_id,
                },
                separators=(",", ":"),
            )
            await complete(conn, grant, result)
        return result

    async def list(self, pump_id: str | None = None, status: WorkOrderStatus | None = None) -> WorkOrderList:
        """Work orders, newest first, filtered by pump and status; capped."""
        pump = normalize_pump_id(pump_id) if pump_id is not None and pump_id.strip() else None
        params = (pump, status.value if status is not None else None)
        where = "(CAST(?1 AS TEXT) IS NULL OR pump_id = ?1) AND (CAST(?2 AS TEXT) IS NULL OR status = ?2)"
        count_row = await self._db.fetch_one("SELECT COUNT(*) AS n FROM work_orders WHERE " + where, params)
        count = count_row["n"] if count_row else 0
        rows = await self._db.fetch_all(
            "SELECT * FROM work_orders WHERE " + where + " ORDER BY created_at DESC, work_order_id DESC LIMIT ?3",
            (*params, MAX_WORK_ORDERS_LISTED),
        )
        orders = [
            WorkOrder(
                work_order_id=r["work_order_id"],
                pump_id=r["pump_id"],
                priority=Priority(r["priority"]),
                summary=r["summary"],
                status=WorkOrderStatus(r["status"]),
                created_at=r["created_at"],
                requested_by=r["requested_by"],
                approved_by=r["approved_by"],
                approval_id=r["approval_id"],
            )
            for r in rows
        ]
        filters = {k: v for k, v in (("pump_id", pump), ("status", params[1])) if v is not None}
        return WorkOrderList(
            filters=filters, count=count, returned=len(orders), truncated=count > len(orders), work_orders=orders
        )
