"""The supervisor's side of the gate: list, approve (execute exactly once) and reject parked actions.

Never a kernel function or an MCP tool: only the `pumpops approvals` commands and the chat's
slash commands reach it, and each decision is audited.
"""

from __future__ import annotations

from semantic_kernel import Kernel
from semantic_kernel.functions import KernelArguments, KernelFunction

from core.errors import PumpOpsError, sentence
from governance import (
    DEFAULT_PAGE,
    Approval,
    ApprovalDecision,
    ApprovalError,
    ApprovalPage,
    ApprovalStatus,
    ApprovalStore,
    DecisionOutcome,
    Grant,
    granting,
    principal_name,
    show_hidden,
)
from governance.audit_log import AuditLog, AuditOutcome
from governance.identity import CallContext, acting_as
from kernel_setup.direct_calls import pumpops_cause, resolve_function
from kernel_setup.errors import ToolCallError
from kernel_setup.filters.approval import audit_hook, policy_for, refusal_hook
from kernel_setup.settings import ApprovalSettings, PolicyDecision

DOOR = "approvals"


class ApprovalService:
    """Decides parked actions and runs approved ones through the kernel under a grant."""

    def __init__(self, store: ApprovalStore, kernel: Kernel, settings: ApprovalSettings, audit: AuditLog) -> None:
        self._store = store
        self._kernel = kernel
        self._settings = settings
        self._audit = audit

    async def list(self, status: str | None = None, *, limit: int = DEFAULT_PAGE, offset: int = 0) -> ApprovalPage:
        """One page of approvals, newest first, optionally of one status (``all`` or None: every status).

        Raises:
            ApprovalError: an unknown status, or a limit or offset out of range.
        """
        wanted = None if status is None else status.strip().lower()
        if wanted in (None, "all"):
            return await self._store.list(limit=limit, offset=offset)
        try:
            known = ApprovalStatus(wanted)
        except ValueError as exc:
            raise ApprovalError(
                f"Unknown status {status!r}; use one of {', '.join(s.value for s in ApprovalStatus)}, or all."
            ) from exc
        return await self._store.list(known, limit=limit, offset=offset)

    async def get(self, approval_id: str) -> Approval:
        """One approval."""
        return await self._store.get(approval_id)

    async def approve(self, approval_id: str, by: str) -> ApprovalDecision:
        """Approve and execute a parked action exactly once; approving it again returns the first result.

        The decision says whether this call ran the action (``executed``) or found it already run, by whom
        and when (``already_executed``, with that execution's result); of several supervisors approving one
        action at once, exactly one runs it.

        Raises:
            PrincipalError: ``by`` is not a valid name.
            ApprovalError: unknown, expired, rejected, refused, self-approval, or the execution failed (the
                approval then stays approved and can be approved again to retry), or the write refused to run
                because the state it assumed changed (the approval is then marked refused, with the reason).
        """
        who = _decider(by)
        try:
            who = CallContext(principal=principal_name(by, option="--by"), door=DOOR)
            parked = await self._store.get(approval_id)
            function = None if parked.status is ApprovalStatus.EXECUTED else self._runnable(parked)
            approval, _ = await self._store.claim(
                approval_id, who.principal, allow_self_approval=self._settings.allow_self_approval
            )
        except PumpOpsError as exc:
            await self._audit_decision("approvals-approve", approval_id, who, AuditOutcome.DENIED, str(exc))
            raise
        await self._audit_decision("approvals-approve", approval.id, who, AuditOutcome.OK, approval.function)
        if approval.status is ApprovalStatus.EXECUTED or function is None:
            return _decision(approval, ran=False)
        hook = audit_hook(self._audit, function, approval.arguments, f"{approval.id} approved by {who.principal}")
        refused = refusal_hook(self._audit, function, approval.arguments, approval.id)
        grant = Grant(
            approval_id=approval.id,
            function=approval.function,
            on_commit=hook,
            approver=who.principal,
            on_refuse=refused,
        )
        with acting_as(who), granting(grant):
            try:
                arguments = KernelArguments()
                arguments.update(approval.arguments)
                await self._kernel.invoke(function, arguments)
            except Exception as exc:
                cause = pumpops_cause(exc)
                message = sentence(str(cause)) if cause is not None else f"{type(exc).__name__}."
                raise ApprovalError(
                    f"{approval.id} is approved but its execution failed: {message} Approve it again to retry."
                ) from exc
        if grant.refused is not None:
            raise ApprovalError(
                f"{approval.id} was not executed: the plant changed since it was proposed. {sentence(grant.refused)} "
                "It is marked refused and cannot run; the operator can propose it again if it is still needed."
            )
        return _decision(await self._store.get(approval.id), ran=grant.executed)

    def _runnable(self, approval: Approval) -> KernelFunction:
        """The function a parked action calls, if it still exists and policy still lets it be approved.

        Raises:
            ApprovalError: the function is gone (renamed or removed) or now denied by policy.
        """
        try:
            function = resolve_function(self._kernel, approval.function)
        except ToolCallError as exc:
            raise ApprovalError(
                f"{approval.id} calls {approval.function}, which no longer exists; reject it with "
                f"`pumpops approvals reject {approval.id} --by NAME --reason ...`."
            ) from exc
        if policy_for(self._settings, function) is PolicyDecision.DENY:
            raise ApprovalError(
                f"{approval.function} is now denied by Approval.Policy; {approval.id} cannot run. Reject it."
            )
        return function

    async def reject(self, approval_id: str, by: str, reason: str) -> Approval:
        """Reject a pending action with a reason; it can never run.

        Raises:
            PrincipalError: ``by`` is not a valid name.
            ApprovalError: unknown id, no reason, or no longer pending.
        """
        who = _decider(by)
        try:
            who = CallContext(principal=principal_name(by, option="--by"), door=DOOR)
            approval = await self._store.reject(approval_id, who.principal, reason)
        except PumpOpsError as exc:
            await self._audit_decision("approvals-reject", approval_id, who, AuditOutcome.DENIED, str(exc))
            raise
        await self._audit_decision("approvals-reject", approval.id, who, AuditOutcome.OK, reason)
        return approval

    async def _audit_decision(
        self, function: str, approval_id: str, who: CallContext, outcome: AuditOutcome, detail: str
    ) -> None:
        await self._audit.record(
            function=function, arguments={"approval_id": approval_id}, outcome=outcome, call=who, detail=detail
        )


def _decider(by: str) -> CallContext:
    """Who a refused decision is audited as: the name as given, hidden characters shown as escapes."""
    return CallContext(principal=show_hidden(by.strip())[:100] or "(nobody)", door=DOOR)


def _decision(approval: Approval, *, ran: bool) -> ApprovalDecision:
    """The approval after an approve call, saying whether that call ran it or found it already run."""
    if ran:
        outcome = DecisionOutcome.EXECUTED
        message = f"{approval.id} was approved by {approval.decided_by} and executed at {approval.executed_at}."
    else:
        outcome = DecisionOutcome.ALREADY_EXECUTED
        message = (
            f"{approval.id} had already been executed by {approval.decided_by} at {approval.executed_at}; this "
            "approval ran nothing again, and the result is that execution's."
        )
    return ApprovalDecision(**approval.model_dump(), outcome=outcome, message=message)
