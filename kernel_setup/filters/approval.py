"""FUNCTION_INVOCATION filter: the approval gate, for every door.

Per-function policy (`Approval.Policy`): reads default to ``allow``, writes to ``require_approval``.
A write needing approval is not run: it is checked (`check_write`: input it could never carry out,
such as an unknown pump or an alarm already acknowledged, is refused at once, audited as ``rejected``; ids
and text are put in canonical form), then parked durably, bound to a hash of its exact canonical arguments,
to the requester and to the state it assumes (its preconditions, re-checked by the write when it runs), and
the caller sees ``{"status": "pending_approval", ...}``. The same intent again returns the same pending
approval, or the first result once it ran (marked ``"replayed": true``: nothing was done again).
Only the approvals door (a context-variable grant) lets the parked call through; write services
check the grant again themselves, so a kernel without this filter still cannot write.

The policy is checked against the kernel once its plugins are added (`check_policy`): a plugin or
function it names that the kernel lacks is a settings error, and the writes it sets to ``allow``
are returned so the app can warn about them and audit them at every start.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext
from semantic_kernel.functions.function_result import FunctionResult
from semantic_kernel.functions.kernel_function import KernelFunction

from core.errors import PumpOpsError
from governance import (
    Approval,
    ApprovalStore,
    Grant,
    PendingLimitError,
    Precondition,
    active_grant,
    granting,
    intent_key,
)
from governance.access import require_role
from governance.audit_log import AuditLog, AuditOutcome
from governance.errors import RoleError
from governance.identity import CallContext, current_call
from governance.roles import Role
from kernel_setup.arguments import ToolArgumentError
from kernel_setup.errors import SettingsError
from kernel_setup.filters.audit import AUDITED_KEY, DETAIL_KEY, STATUS_KEY
from kernel_setup.settings import ApprovalSettings, PolicyDecision
from kernel_setup.tracing import note_audit_row
from plugins.declarations import check_write, traits_of
from storage import Connection

POLICY_APPROVER = "policy:allow"


def policy_for(settings: ApprovalSettings, function: KernelFunction) -> PolicyDecision:
    """The configured decision for a function, else the default for its declared effect."""
    configured = settings.policy.get(function.plugin_name or "", {}).get(function.name)
    if configured is not None:
        return configured
    return PolicyDecision.ALLOW if traits_of(function).read_only else PolicyDecision.REQUIRE_APPROVAL


def check_policy(settings: ApprovalSettings, kernel: Kernel, *, source: str) -> list[KernelFunction]:
    """Check `Approval.Policy` against the kernel's functions; return the writes it lets run without approval.

    Args:
        settings: The approval settings.
        kernel: The kernel the policy governs, its plugins added.
        source: Where the settings came from (a file path), for the message.

    Raises:
        SettingsError: the policy names a plugin, or a function of a plugin, that the kernel does not
            have (a misspelling would otherwise be ignored silently); the message lists the valid names.
    """
    plugins = kernel.plugins
    problems: list[str] = []
    allowed_writes: list[KernelFunction] = []
    for plugin_name, functions in settings.policy.items():
        plugin = plugins.get(plugin_name)
        if plugin is None:
            problems.append(
                f"  - Approval.Policy.{plugin_name}: unknown plugin. Plugins: {', '.join(sorted(plugins))}."
            )
            continue
        for function_name, decision in functions.items():
            function = plugin.functions.get(function_name)
            if function is None:
                problems.append(
                    f"  - Approval.Policy.{plugin_name}.{function_name}: unknown function. "
                    f"Functions of {plugin_name}: {', '.join(sorted(plugin.functions))}."
                )
            elif decision is PolicyDecision.ALLOW and not traits_of(function).read_only:
                allowed_writes.append(function)
    if problems:
        raise SettingsError(
            "\n".join(
                [f"Invalid settings (from {source}): Approval.Policy names what this kernel does not have:", *problems]
            )
        )
    return sorted(allowed_writes, key=lambda function: function.fully_qualified_name)


def audit_hook(
    audit: AuditLog | None,
    function: KernelFunction,
    arguments: dict[str, object],
    detail: str,
    outcome: AuditOutcome = AuditOutcome.OK,
):
    """A grant hook that appends the execution's audit row inside the write's own transaction.

    With ``outcome`` ``denied`` it is the refusal hook (`Grant.on_refuse`): the detail then also names the reason.
    """
    if audit is None:
        return None

    async def hook(conn: Connection, result: str) -> None:
        row = await audit.record_in(
            conn,
            function=function.fully_qualified_name,
            arguments=arguments,
            outcome=outcome,
            effect=traits_of(function).effect,
            detail=detail if outcome is AuditOutcome.OK else f"{detail}; refused: {_reason(result)}",
            result_text=result,
        )
        note_audit_row(row)  # the execute_tool span, when traced, names the row

    return hook


def refusal_hook(audit: AuditLog | None, function: KernelFunction, arguments: dict[str, object], approval_id: str):
    """A grant hook that audits, as ``denied``, an approved write refused because its preconditions changed."""
    detail = f"{approval_id} not executed: its preconditions no longer held"
    return audit_hook(audit, function, arguments, detail, AuditOutcome.DENIED)


def _reason(result: str) -> str:
    try:
        value = json.loads(result)
    except ValueError:
        return result
    return str(value.get("reason", result)) if isinstance(value, dict) else result


class ApprovalGate:
    """Parks writes for a human, denies what policy denies, lets granted actions through."""

    def __init__(self, store: ApprovalStore, settings: ApprovalSettings, audit: AuditLog | None) -> None:
        self._store = store
        self._settings = settings
        self._audit = audit

    async def __call__(
        self, context: FunctionInvocationContext, next: Callable[[FunctionInvocationContext], Awaitable[None]]
    ) -> None:
        """Apply the policy to one invocation."""
        function = context.function
        name = function.fully_qualified_name
        decision = policy_for(self._settings, function)
        refusal = _refusal(name, decision, read_only=traits_of(function).read_only)
        if refusal is not None:
            self._answer(context, {"status": "denied", "function": name, "message": refusal}, "denied")
            return
        if traits_of(function).read_only:  # a read the policy allows
            await next(context)
            return
        grant = active_grant()
        if grant is not None and grant.function == name:
            await next(context)  # the approvals door executing an approved action; the service re-checks
            _mark_audited(context, grant)
            return
        await self._propose(context, next, decision)

    async def _propose(
        self,
        context: FunctionInvocationContext,
        next: Callable[[FunctionInvocationContext], Awaitable[None]],
        decision: PolicyDecision,
    ) -> None:
        """A write without a grant: replay its first result, or park it (and, when policy allows it, run it)."""
        function = context.function
        name = function.fully_qualified_name
        call = current_call()
        if call.proof.proven:  # a person proposes with the operator or supervisor role; unproven callers carry none
            try:
                require_role(call, f"propose {name}", Role.OPERATOR, Role.SUPERVISOR)
            except RoleError as exc:
                self._answer(context, {"status": "denied", "function": name, "message": str(exc)}, "denied", str(exc))
                return
        arguments, intent, first, preconditions = await self._intent(context, call)
        if first is not None:
            context.result = FunctionResult(
                function=function.metadata,
                value=_replayed(first),
                metadata={STATUS_KEY: "ok", DETAIL_KEY: "replayed: this exact action already ran; first result"},
            )
            return
        approval = await self._park(context, arguments, intent, call, decision, preconditions)
        if approval is None:
            return  # refused: the requester has too many actions pending
        if decision is PolicyDecision.ALLOW:
            await self._store.claim(approval.id, POLICY_APPROVER, allow_self_approval=True)
            hook = audit_hook(self._audit, function, arguments, f"{approval.id} allowed by policy")
            refused = refusal_hook(self._audit, function, arguments, approval.id)
            policy_grant = Grant(approval_id=approval.id, function=name, on_commit=hook, on_refuse=refused)
            with granting(policy_grant):
                await next(context)
            _mark_audited(context, policy_grant)
            return
        self._answer(
            context,
            {
                "status": "pending_approval",
                "approval_id": approval.id,
                "function": name,
                "expires_at": approval.expires_at,
                "message": (
                    "Parked for a human supervisor's approval; nothing has been executed. Tell the operator the "
                    "approval id. Saying it is approved does not approve it."
                ),
            },
            "pending_approval",
            approval.id,
        )

    async def _intent(
        self, context: FunctionInvocationContext, call: CallContext
    ) -> tuple[dict[str, Any], str, str | None, tuple[Precondition, ...]]:
        """The write's canonical arguments, intent key, first result if the intent already ran, and preconditions.

        Raises:
            ToolArgumentError: the write's declared check refuses the input now (what the write would refuse:
                an unknown pump, a one-character summary, an alarm already acknowledged); the message says how
                to recover.
        """
        function = context.function
        name = function.fully_qualified_name
        arguments = dict(context.arguments)
        intent = intent_key(call.principal, call.session, name, arguments)
        first = await self._store.executed_result(intent)
        preconditions: tuple[Precondition, ...] = ()
        if first is None:
            # Input the write would refuse is refused here, not parked; the rest in canonical form
            # ("pump-007 " is PUMP-007), so spelling variants of one intent are one approval.
            try:
                checked = await check_write(function, arguments)
            except PumpOpsError as exc:
                raise ToolArgumentError(str(exc)) from exc
            canonical, preconditions = dict(checked.arguments), checked.preconditions
            if canonical != arguments:
                arguments = canonical
                context.arguments.update(canonical)
                intent = intent_key(call.principal, call.session, name, arguments)
                first = await self._store.executed_result(intent)
            if first is None and checked.refusal is not None:
                raise ToolArgumentError(checked.refusal)
        return arguments, intent, first, preconditions

    async def _park(
        self,
        context: FunctionInvocationContext,
        arguments: dict[str, Any],
        intent: str,
        call: CallContext,
        decision: PolicyDecision,
        preconditions: tuple[Precondition, ...],
    ) -> Approval | None:
        """Park the write for approval; None, with the caller answered, when the requester has too many pending."""
        name = context.function.fully_qualified_name
        try:
            return await self._store.park(
                name,
                arguments,
                intent=intent,
                requested_by=call.principal,
                session=call.session,
                expiry_minutes=self._settings.expiry_minutes,
                max_pending=None if decision is PolicyDecision.ALLOW else self._settings.max_pending_per_principal,
                preconditions=preconditions,
            )
        except PendingLimitError as exc:  # a flood of proposals: refused (and audited as denied), never parked
            self._answer(
                context,
                {
                    "status": "denied",
                    "function": name,
                    "pending": exc.pending,
                    "limit": exc.limit,
                    "message": str(exc),
                },
                "denied",
                f"{exc.pending} pending, limit {exc.limit}",
            )
            return None

    @staticmethod
    def _answer(context: FunctionInvocationContext, payload: dict[str, object], status: str, detail: str = "") -> None:
        context.result = FunctionResult(
            function=context.function.metadata,
            value=json.dumps(payload, separators=(",", ":")),
            metadata={STATUS_KEY: status, DETAIL_KEY: detail or None},
        )


def _refusal(name: str, decision: PolicyDecision, *, read_only: bool) -> str | None:
    """Why the policy refuses the call outright, as the message for the caller; None when it may go on."""
    if decision is PolicyDecision.DENY:
        return (
            f"{name} is not allowed by PumpOps policy (Approval.Policy). Nothing was executed; "
            "tell the operator to ask an administrator if it is needed."
        )
    if read_only and decision is not PolicyDecision.ALLOW:
        return f"{name} is a read; Approval.Policy can allow or deny reads but not park them. Nothing was run."
    return None


def _replayed(first: str) -> str:
    """The first result of an action that already ran, saying so (a caller must not report it as done again)."""
    try:
        value = json.loads(first)
    except ValueError:
        return first
    if not isinstance(value, dict):
        return first
    value["replayed"] = True
    value["message"] = "This exact action already ran; this is its first result. Nothing was done again."
    return json.dumps(value, separators=(",", ":"))


def _mark_audited(context: FunctionInvocationContext, grant: Grant) -> None:
    if grant.committed and context.result is not None:
        context.result.metadata[AUDITED_KEY] = True
        if grant.refused is not None:  # the write refused to run: its preconditions changed (audited as denied)
            context.result.metadata[STATUS_KEY] = "denied"
            context.result.metadata[DETAIL_KEY] = grant.refused
