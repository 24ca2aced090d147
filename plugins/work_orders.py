"""The `work_orders` plugin: propose work orders (parked for approval), list them, follow approvals."""

from __future__ import annotations

from typing import Annotated

from semantic_kernel.functions import kernel_function

from governance import ApprovalStore, CheckedWrite, active_grant
from plugins.declarations import reads, writes
from plugins.results import to_json
from twin.work_orders import Priority, WorkOrderService, WorkOrderStatus

# What names work orders themselves (a read's `plugins.declarations.ToolTraits.asked_by`): a question holding one
# is answered from the work-order list.
WORK_ORDER_WORDS = ("work order", "workorder", "ticket")

# What an operator's request for work holds (`plugins.declarations.ToolTraits.asked_by`): the work order itself, or
# the maintenance it is for ("grease the bearings of PUMP-002", "schedule an alignment check").
WORK_REQUEST_WORDS = (
    "work order", "workorder", "ticket", "job", "maintenance", "maintain", "service", "inspect", "repair", "fix",
    "replace", "grease", "lubricat", "clean", "align", "calibrat", "overhaul", "tighten", "schedule", "raise", "book",
    "plan",
)  # fmt: skip


class WorkOrdersPlugin:
    """Thin kernel-function adapter over `WorkOrderService` and the approval store."""

    def __init__(self, service: WorkOrderService, approvals: ApprovalStore) -> None:
        self._service = service
        self._approvals = approvals

    @writes(
        idempotent=False,
        destructive=False,
        # A work order asks for maintenance: it silences no alarm and changes no equipment, and a wrong one is
        # seen and cancelled by whoever plans the work; self-approval may be allowed for it.
        safety_relevant=False,
        check="check_create_work_order",
        asked_by=WORK_REQUEST_WORDS,
    )
    @kernel_function(
        name="create_work_order",
        description=(
            "Returns {status: pending_approval, approval_id} — proposes a maintenance work order for one pump; "
            "a human supervisor must approve it before it is created, and nothing happens until then. Use it when "
            "the operator asks to raise or schedule work. Check work_orders-list_work_orders first to avoid "
            "duplicates. Never claims equipment was stopped or changed."
        ),
    )
    async def create_work_order(
        self,
        pump_id: Annotated[str, "Exact pump identifier, e.g. 'PUMP-007'."],
        priority: Annotated[Priority, "How soon, e.g. 'high'; 'urgent' only for zone D or trip-level readings."],
        summary: Annotated[
            str,
            "What to do and why, 5-500 characters: the operator's own request, e.g. for 'grease the bearings of "
            "PUMP-002' write 'Grease the bearings'; no value a tool did not return.",
        ],
    ) -> str:
        """Create a work order (runs only under an approval grant)."""
        return await self._service.create(pump_id, priority, summary, active_grant())

    async def check_create_work_order(self, pump_id: str, priority: Priority | str, summary: str) -> CheckedWrite:
        """Raise what `create_work_order` would for this input now; no write.

        It refuses an unknown or decommissioned pump, a bad summary, and the same work already open for the pump.

        Returns the pump id and summary in canonical form, and the state the work order assumes.
        """
        return await self._service.check(pump_id, summary)

    @reads(asked_by=WORK_ORDER_WORDS)
    @kernel_function(
        name="list_work_orders",
        description=(
            "Returns work orders (id, pump id, priority, summary, status, who requested and approved), newest "
            "first, at most 50. Use it to check for existing work before proposing new work, or to follow up."
        ),
    )
    async def list_work_orders(
        self,
        pump_id: Annotated[str | None, "Only this pump's work orders, e.g. 'PUMP-007'. Omit for all."] = None,
        status: Annotated[WorkOrderStatus | None, "Only work orders in this state, e.g. 'open'. Omit for all."] = None,
    ) -> str:
        """Work orders as JSON."""
        return to_json(await self._service.list(pump_id=pump_id, status=status))

    @reads
    @kernel_function(
        name="get_approval_status",
        description=(
            "Returns the state of a parked action (pending, approved, executed, rejected or expired), who decided "
            "and the result once executed. Use it when the operator asks whether a proposed action went through."
        ),
    )
    async def get_approval_status(
        self, approval_id: Annotated[str, "The id returned when the action was parked, e.g. 'APR-1A2B3C4D'."]
    ) -> str:
        """One approval as JSON."""
        approval = await self._approvals.get(approval_id)
        return approval.model_dump_json()
