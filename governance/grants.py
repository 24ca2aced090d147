"""Grants: the approvals service's permission for one exact write, redeemed inside the write's transaction.

A grant travels in a context variable set by the approvals door, never in kernel arguments, so a
model or MCP client cannot forge one. Write services call `redeem` inside their own transaction:
it checks the approval row (approved, same function, same argument hash), returns the first result
when the intent already ran, and otherwise lets the write proceed; `complete` then records the
result, the idempotency record and (through the grant's hook) the audit row in that same transaction.
When the state the action assumed no longer holds (`governance.preconditions`), the service calls `refuse`
instead: the approval is marked refused, and (through the grant's refusal hook) audited, in that transaction,
and nothing else is written.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from governance.errors import ApprovalRequiredError
from governance.intent import args_hash
from governance.principals import same_principal
from storage import Connection

CommitHook = Callable[[Connection, str], Awaitable[None]]


@dataclass
class Grant:
    """Permission to run one approved action once.

    ``approver`` is the supervisor whose approval runs it now (None: the one the approval row names); when
    an approved action runs under another supervisor's approval (a retry, or two approving at once), the row
    is re-stamped with the supervisor whose approval actually ran it. ``executed`` is set when this grant's
    write ran and recorded its result; it stays false when the action had already run (a replay). ``refused`` is
    the reason when the write refused to run because the state it assumed had changed (`refuse`).
    """

    approval_id: str
    function: str
    on_commit: CommitHook | None = None
    approver: str | None = None
    on_refuse: CommitHook | None = None
    committed: bool = field(default=False)
    executed: bool = field(default=False)
    requested_by: str | None = field(default=None)
    approved_by: str | None = field(default=None)
    refused: str | None = field(default=None)


_GRANT: ContextVar[Grant | None] = ContextVar("pumpops_grant", default=None)


def active_grant() -> Grant | None:
    """The grant the approvals door set for the invocation running now, if any."""
    return _GRANT.get()


@contextmanager
def granting(grant: Grant) -> Iterator[Grant]:
    """Run the enclosed invocation under ``grant``."""
    token = _GRANT.set(grant)
    try:
        yield grant
    finally:
        _GRANT.reset(token)


async def redeem(conn: Connection, grant: Grant | None, function: str, arguments: Mapping[str, Any]) -> str | None:
    """Check a grant inside the write's transaction; return the first result if the action already ran.

    On success the grant also carries who requested and who approved the action, read from the same row.

    Raises:
        ApprovalRequiredError: no grant, or one that does not match an approved action with exactly
            these arguments.
    """
    if grant is None:
        raise ApprovalRequiredError(
            f"{function} changes records and needs a supervisor's approval. It was not executed. "
            "Propose it through PumpOps (it will be parked as pending_approval) and a supervisor approves it "
            "with `pumpops approvals approve ID`."
        )
    async with conn.execute(
        "SELECT function, args_hash, status, result, intent_key, expires_at, requested_by, decided_by "
        "FROM approvals WHERE approval_id = ?",
        (grant.approval_id,),
    ) as cursor:
        row = await cursor.fetchone()
    if row is None or row["function"] != function or grant.function != function:
        raise ApprovalRequiredError(f"Approval {grant.approval_id!r} does not cover {function}; nothing was executed.")
    if row["args_hash"] != args_hash(function, arguments):
        raise ApprovalRequiredError(
            f"Approval {grant.approval_id!r} was given for different arguments; nothing was executed."
        )
    if row["status"] == "executed":
        return str(row["result"])
    if row["status"] != "approved":
        raise ApprovalRequiredError(
            f"Approval {grant.approval_id!r} is {row['status']}, not approved; nothing was executed."
        )
    if row["expires_at"] <= datetime.now(UTC).isoformat(timespec="seconds"):
        raise ApprovalRequiredError(
            f"Approval {grant.approval_id!r} expired at {row['expires_at']} before it ran; nothing was executed."
        )
    async with conn.execute("SELECT result FROM idempotency WHERE intent_key = ?", (row["intent_key"],)) as cursor:
        done = await cursor.fetchone()
    if done is not None:
        # The same intent already ran under another approval: this one returns that result and writes nothing.
        await conn.execute(
            "UPDATE approvals SET status = 'executed', executed_at = ?, result = ? WHERE approval_id = ?",
            (datetime.now(UTC).isoformat(timespec="seconds"), done["result"], grant.approval_id),
        )
        return str(done["result"])
    approved_by = row["decided_by"]
    if grant.approver is not None and not same_principal(grant.approver, approved_by or ""):
        # The approval that runs it is this one: the record names who ran it, not who approved it first.
        approved_by = grant.approver
        await conn.execute(
            "UPDATE approvals SET decided_by = ?, decided_at = ? WHERE approval_id = ?",
            (approved_by, datetime.now(UTC).isoformat(timespec="seconds"), grant.approval_id),
        )
    grant.requested_by, grant.approved_by = row["requested_by"], approved_by
    return None


async def complete(conn: Connection, grant: Grant, result: str) -> None:
    """Record the executed action's result and its idempotency record (and audit row, via the hook)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    await conn.execute(
        "UPDATE approvals SET status = 'executed', executed_at = ?, result = ? WHERE approval_id = ?",
        (now, result, grant.approval_id),
    )
    await conn.execute(
        "INSERT INTO idempotency (intent_key, function, result, created_at) "
        "SELECT intent_key, function, ?, ? FROM approvals WHERE approval_id = ? ON CONFLICT DO NOTHING",
        (result, now, grant.approval_id),
    )
    grant.executed = True
    if grant.on_commit is not None:
        await grant.on_commit(conn, result)
        grant.committed = True


async def refuse(conn: Connection, grant: Grant, reason: str) -> str:
    """Record, in the write's transaction, that the approved action did not run because its preconditions changed.

    The approval is marked refused (stored ``rejected`` with ``refused_at``, reported ``refused``) with the reason,
    no idempotency record is made (proposing it again is checked afresh), and the grant's refusal hook appends the
    audit row. Returns the result the write answers with: ``{"status": "refused", "approval_id", "reason"}``.
    """
    now = datetime.now(UTC).isoformat(timespec="seconds")
    await conn.execute(
        "UPDATE approvals SET status = 'rejected', refused_at = ?, reason = ? WHERE approval_id = ?",
        (now, reason[:500], grant.approval_id),
    )
    result = json.dumps(
        {
            "status": "refused",
            "approval_id": grant.approval_id,
            "reason": reason,
            "message": "The plant changed since this was proposed; nothing was written.",
        },
        separators=(",", ":"),
    )
    grant.refused = reason
    if grant.on_refuse is not None:
        await grant.on_refuse(conn, result)
        grant.committed = True
    return result
