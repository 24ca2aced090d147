"""The approvals service with each decision traced: a ``pumpops.approval`` span (names in docs/tracing.md).

A subclass rather than code inside `ApprovalService`, so the service's rules stay in one place: the span wraps the
whole decision, and an approved action's execution (its ``execute_tool`` span) is a child of it.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from semantic_kernel import Kernel

from core.errors import PumpOpsError
from governance import Approval, ApprovalDecision, ApprovalStore, args_hash
from governance.audit_log import AuditLog
from governance.identity import CallContext
from kernel_setup.approvals import ApprovalService
from kernel_setup.settings import ApprovalSettings
from kernel_setup.tracing import (
    APPROVAL_APPROVER,
    APPROVAL_ARGS_HASH,
    APPROVAL_ARGUMENTS,
    APPROVAL_DECISION,
    APPROVAL_FUNCTION,
    APPROVAL_ID,
    APPROVAL_REQUESTER,
    APPROVAL_SPAN,
    Tracing,
)

_D = TypeVar("_D")


class TracedApprovalService(ApprovalService):
    """`ApprovalService` whose ``approve`` and ``reject`` each make one ``pumpops.approval`` span."""

    def __init__(
        self, store: ApprovalStore, kernel: Kernel, settings: ApprovalSettings, audit: AuditLog, *, tracing: Tracing
    ) -> None:
        super().__init__(store, kernel, settings, audit)
        self._approval_store = store
        self._tracing = tracing

    async def approve(self, approval_id: str, who: CallContext) -> ApprovalDecision:  # noqa: D102 - as the base's
        return await self._traced("approved", approval_id, who, super().approve(approval_id, who))

    async def reject(self, approval_id: str, who: CallContext, reason: str) -> Approval:  # noqa: D102 - as the base's
        return await self._traced("rejected", approval_id, who, super().reject(approval_id, who, reason))

    async def _traced(self, decision: str, approval_id: str, who: CallContext, decide: Awaitable[_D]) -> _D:
        attributes: dict[str, str] = {APPROVAL_ID: approval_id.strip().upper(), APPROVAL_APPROVER: who.principal}
        with self._tracing.span(APPROVAL_SPAN, attributes) as span:
            parked = await self._parked(approval_id)
            if span is not None and parked is not None:
                span.set_attributes(self._described(parked))
            try:
                decided = await decide
            except BaseException:
                if span is not None:
                    span.set_attribute(APPROVAL_DECISION, "refused")
                raise
            if span is not None:
                span.set_attribute(APPROVAL_DECISION, decision)
            return decided

    async def _parked(self, approval_id: str) -> Approval | None:
        """The approval as it stood before the decision, or None when there is none by that id."""
        try:
            return await self._approval_store.get(approval_id)
        except PumpOpsError:  # the decision itself reports the unknown id, and is traced as refused
            return None

    def _described(self, parked: Approval) -> dict[str, str]:
        described = {
            APPROVAL_ID: parked.id,
            APPROVAL_REQUESTER: parked.requested_by,
            APPROVAL_FUNCTION: parked.function,
            APPROVAL_ARGS_HASH: args_hash(parked.function, parked.arguments),
        }
        if self._tracing.include_content:
            described[APPROVAL_ARGUMENTS] = self._tracing.content(parked.arguments)
        return described
