"""The supervisor's side of the gate: list, approve (execute exactly once) and reject parked actions.

Never a kernel function or an MCP tool: only the `pumpops approvals` commands, the chat's slash
commands and an authenticated approval endpoint reach it, each passing the decider as its door proved
it (`CallContext`). Deciding needs the supervisor role; approving needs a principal other than the
requester (four eyes), relaxed by `Approval.AllowSelfApproval` except for safety-relevant writes. Each
decision, and each refusal, is audited.
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
    args_hash,
    granting,
    same_principal,
    show_hidden,
)
from governance.access import require_role
from governance.audit_log import AuditLog, AuditOutcome
from governance.errors import SelfApprovalError
from governance.identity import CallContext, acting_as
from governance.roles import Role
from kernel_setup.direct_calls import pumpops_cause, resolve_function
from kernel_setup.errors import ToolCallError
from kernel_setup.filters.approval import audit_hook, policy_for, refusal_hook
from kernel_setup.settings import ApprovalSettings, PolicyDecision
from plugins.declarations import traits_of


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

    async def approve(self, approval_id: str, who: CallContext) -> ApprovalDecision:
        """Approve and execute a parked action exactly once as ``who``; approving it again returns the first result.

        ``who`` is the decider as its door proved it (a local door's OS user, a token's principal). The
        decision says whether this call ran the action (``executed``) or found it already run, by whom and
        when (``already_executed``, with that execution's result); of several supervisors approving one
        action at once, exactly one runs it. Every refusal is audited as denied.

        Raises:
            RoleError: ``who`` is not a proven principal with the supervisor role.
            ApprovalError: unknown, expired, rejected, refused, the requester approving its own action (four
                eyes), or the execution failed (the approval then stays approved and can be approved again to
                retry), or the write refused to run because the state it assumed changed (the approval is then
                marked refused, with the reason).
        """
        try:
            require_role(who, f"approve {_shown(approval_id)}", Role.SUPERVISOR)
            parked = await self._store.get(approval_id)
            function = None if parked.status is ApprovalStatus.EXECUTED else self._runnable(parked)
            allow_self = self._four_eyes(parked, who, function)
            approval, _ = await self._store.claim(approval_id, who.principal, allow_self_approval=allow_self)
        except PumpOpsError as exc:
            await self._audit_decision("approvals-approve", approval_id, who, AuditOutcome.DENIED, str(exc))
            raise
        await self._audit_decision(
            "approvals-approve", approval.id, who, AuditOutcome.OK, approval.function, decided=approval
        )
        if approval.status is ApprovalStatus.EXECUTED or function is None:
            return _decision(approval, ran=False)
        hook = audit_hook(self._audit, function, approval.arguments, f"{approval.id} approved by {who.audit_name}")
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

    def _four_eyes(self, parked: Approval, who: CallContext, function: KernelFunction | None) -> bool:
        """Whether the requester may approve ``parked`` itself (the claim's ``allow_self_approval``).

        `Approval.AllowSelfApproval` allows it, never for a safety-relevant write (`ToolTraits.safety_relevant`).

        Raises:
            SelfApprovalError: ``who`` requested ``parked`` and may not approve it.
        """
        safety = function is not None and traits_of(function).safety_relevant
        allowed = self._settings.allow_self_approval and not safety
        if not allowed and parked.status is not ApprovalStatus.EXECUTED:
            if same_principal(who.principal, parked.requested_by):
                why = (
                    f"{parked.function} is safety-relevant, so the four-eyes rule holds even with "
                    "Approval.AllowSelfApproval"
                    if safety and self._settings.allow_self_approval
                    else "four eyes: Approval.AllowSelfApproval is false"
                )
                raise SelfApprovalError(
                    f"{who.principal} requested {parked.id} and cannot approve it ({why}). A supervisor other than "
                    f"the requester approves it with `pumpops approvals approve {parked.id}`."
                )
        return allowed

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
                f"`pumpops approvals reject {approval.id} --reason ...`."
            ) from exc
        if policy_for(self._settings, function) is PolicyDecision.DENY:
            raise ApprovalError(
                f"{approval.function} is now denied by Approval.Policy; {approval.id} cannot run. Reject it."
            )
        return function

    async def reject(self, approval_id: str, who: CallContext, reason: str) -> Approval:
        """Reject a pending action as ``who`` with a reason; it can never run. Every refusal is audited as denied.

        Raises:
            RoleError: ``who`` is not a proven principal with the supervisor role.
            ApprovalError: unknown id, no reason, or no longer pending.
        """
        try:
            require_role(who, f"reject {_shown(approval_id)}", Role.SUPERVISOR)
            approval = await self._store.reject(approval_id, who.principal, reason)
        except PumpOpsError as exc:
            await self._audit_decision("approvals-reject", approval_id, who, AuditOutcome.DENIED, str(exc))
            raise
        await self._audit_decision("approvals-reject", approval.id, who, AuditOutcome.OK, reason, decided=approval)
        return approval

    async def _audit_decision(
        self,
        function: str,
        approval_id: str,
        who: CallContext,
        outcome: AuditOutcome,
        detail: str,
        *,
        decided: Approval | None = None,
    ) -> None:
        """One audit row per decision or refusal.

        A decision's row binds, in the hash chain, the approval to the decider's proof (how the door knew who
        decided) and to the hash of the exact arguments it lets run.
        """
        arguments: dict[str, str] = {"approval_id": approval_id, "proof": who.proof.value}
        if decided is not None:
            arguments["args_hash"] = args_hash(decided.function, decided.arguments)
        await self._audit.record(function=function, arguments=arguments, outcome=outcome, call=who, detail=detail)


def _shown(approval_id: str) -> str:
    """An approval id as typed, for a message: trimmed, capped, hidden characters shown as escapes."""
    return show_hidden(approval_id.strip())[:40] or "(no id)"


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
