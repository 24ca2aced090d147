"""Parked write actions awaiting a human: durable rows bound to exact arguments and a requester."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from pydantic import BaseModel

from governance.errors import ApprovalError, PendingLimitError
from governance.intent import args_hash, canonical_json
from governance.preconditions import Precondition
from governance.principals import same_principal
from storage import Database

DEFAULT_PAGE = 50
"""How many approvals one listing shows unless asked for another page size."""
MAX_PAGE = 1000
APPROVAL_ID = re.compile(r"APR-[0-9A-F]{8}")
"""The form of the ids `ApprovalStore.park` issues."""


class ApprovalStatus(str, Enum):
    """Where a parked action stands."""

    PENDING = "pending"
    APPROVED = "approved"
    EXECUTED = "executed"
    REJECTED = "rejected"
    EXPIRED = "expired"
    REFUSED = "refused"
    """Approved, but not executed: the state it assumed (its preconditions) had changed when it was to run."""


class Approval(BaseModel):
    """One parked action (DESIGN.md "Approval JSON")."""

    id: str
    function: str
    arguments: dict[str, Any]
    status: ApprovalStatus
    requested_by: str
    requested_at: str
    expires_at: str
    decided_by: str | None = None
    decided_at: str | None = None
    reason: str | None = None
    executed_at: str | None = None
    result: Any = None
    preconditions: list[Precondition] = []
    """The state the action assumed when it was parked, re-checked when it runs."""
    refused_at: str | None = None
    """When its run was refused because a precondition no longer held (the reason is in ``reason``)."""


class DecisionOutcome(str, Enum):
    """What one approval call did."""

    EXECUTED = "executed"
    """This call ran the action."""
    ALREADY_EXECUTED = "already_executed"
    """The action had already run (another approval, or this one earlier); this call ran nothing."""


class ApprovalDecision(Approval):
    """An approval after a supervisor's approve call, saying whether that call ran it."""

    outcome: DecisionOutcome
    message: str


class ApprovalPage(BaseModel):
    """One page of a listing: the approvals shown, how many match in all, and where the page starts."""

    approvals: list[Approval]
    total: int
    offset: int
    limit: int

    def describe(self) -> str:
        """Which rows the page shows, e.g. 'showing 1-50 of 312'."""
        if not self.approvals:
            return f"showing none of {self.total}" + (f" (offset {self.offset} is past the end)" if self.total else "")
        return f"showing {self.offset + 1}-{self.offset + len(self.approvals)} of {self.total}"

    @property
    def next_offset(self) -> int | None:
        """The offset of the next page, or None on the last one."""
        end = self.offset + len(self.approvals)
        return end if self.approvals and end < self.total else None


def _now() -> datetime:
    return datetime.now(UTC)


def _ts(value: datetime) -> str:
    return value.isoformat(timespec="seconds")


class ApprovalStore:
    """Reads and state transitions of approvals; every transition is a single guarded UPDATE."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def park(
        self,
        function: str,
        arguments: Mapping[str, Any],
        *,
        intent: str,
        requested_by: str,
        session: str | None,
        expiry_minutes: int,
        max_pending: int | None = None,
        preconditions: Sequence[Precondition] = (),
    ) -> Approval:
        """Park an action as pending; the same intent still pending or approved returns the existing approval.

        ``preconditions`` is the state the action assumes, stored with it (see `governance.preconditions`).

        Raises:
            PendingLimitError: the requester already has ``max_pending`` actions pending (a new intent only).
        """
        now = _now()
        async with self._db.transaction() as conn:
            async with conn.execute(
                "SELECT approval_id FROM approvals WHERE intent_key = ? AND status IN ('pending', 'approved') "
                "AND expires_at > ? "
                "ORDER BY requested_at DESC LIMIT 1",
                (intent, _ts(now)),
            ) as cursor:
                existing = await cursor.fetchone()
            if existing is None:
                if max_pending is not None:
                    await _check_pending_limit(conn, requested_by, max_pending, now)
                approval_id = f"APR-{secrets.token_hex(4).upper()}"
                await conn.execute(
                    "INSERT INTO approvals (approval_id, function, arguments, args_hash, intent_key, status, "
                    "requested_by, session, requested_at, expires_at, preconditions) "
                    "VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?)",
                    (
                        approval_id,
                        function,
                        canonical_json(arguments),
                        args_hash(function, arguments),
                        intent,
                        requested_by,
                        session,
                        _ts(now),
                        _ts(now + timedelta(minutes=expiry_minutes)),
                        json.dumps([p.model_dump() for p in preconditions], ensure_ascii=False),
                    ),
                )
            else:
                approval_id = existing["approval_id"]
        return await self.get(approval_id)

    async def executed_result(self, intent: str) -> str | None:
        """The first result of an intent that already ran, if it did."""
        row = await self._db.fetch_one("SELECT result FROM idempotency WHERE intent_key = ?", (intent,))
        return None if row is None else str(row["result"])

    async def get(self, approval_id: str) -> Approval:
        """One approval.

        Raises:
            ApprovalError: no approval has that id.
        """
        row = await self._db.fetch_one("SELECT * FROM approvals WHERE approval_id = ?", (approval_id.strip().upper(),))
        if row is None:
            raise ApprovalError(
                f"No approval with id {approval_id[:40]!r}. Approval ids look like 'APR-1A2B3C4D'; "
                "list them with `pumpops approvals list`."
            )
        return _approval(row)

    async def list(
        self, status: ApprovalStatus | None = None, *, limit: int = DEFAULT_PAGE, offset: int = 0
    ) -> ApprovalPage:
        """One page of approvals, newest first, optionally of one status (expired ones report as expired).

        The status is filtered in SQL before paging, so a page never hides a matching approval.

        Raises:
            ApprovalError: a limit outside 1-1000 or a negative offset.
        """
        if not 1 <= limit <= MAX_PAGE or offset < 0:
            raise ApprovalError(
                f"List approvals with a limit of 1 to {MAX_PAGE} and an offset of 0 or more (got limit {limit}, "
                f"offset {offset}), e.g. --limit 50 --offset 50 for the second page."
            )
        where, params = _status_filter(status, _ts(_now()))
        counted = await self._db.fetch_one(f"SELECT COUNT(*) AS n FROM approvals {where}", params)
        rows = await self._db.fetch_all(
            f"SELECT * FROM approvals {where} ORDER BY requested_at DESC, approval_id LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        total = 0 if counted is None else int(counted["n"])
        return ApprovalPage(approvals=[_approval(row) for row in rows], total=total, offset=offset, limit=limit)

    async def claim(self, approval_id: str, by: str, *, allow_self_approval: bool) -> tuple[Approval, bool]:
        """Move a pending approval to approved; return it and whether this call won the claim.

        A second approver of the same action does not win; an already approved but unexecuted action
        (a crash between approval and execution) may be executed again, which the write's own
        transaction makes safe.

        Raises:
            ApprovalError: unknown id, expired, rejected, or self-approval when not allowed.
        """
        approval = await self.get(approval_id)
        if approval.status is ApprovalStatus.EXECUTED:
            return approval, False
        if approval.status is ApprovalStatus.REJECTED:
            raise ApprovalError(f"Approval {approval.id} was rejected by {approval.decided_by}; it cannot run.")
        if approval.status is ApprovalStatus.REFUSED:
            raise ApprovalError(
                f"Approval {approval.id} was refused when it was to run ({approval.reason}); it cannot run. "
                "Ask the operator to propose it again if it is still needed."
            )
        if approval.status is ApprovalStatus.EXPIRED:
            raise ApprovalError(
                f"Approval {approval.id} expired at {approval.expires_at} without running; ask the operator to "
                "propose it again."
            )
        if not allow_self_approval and same_principal(by, approval.requested_by):
            raise ApprovalError(
                f"{by} requested {approval.id} and cannot approve it (Approval.AllowSelfApproval is false). "
                f"A supervisor other than the requester approves it with `pumpops approvals approve {approval.id}`."
            )
        if approval.status is ApprovalStatus.APPROVED:
            return approval, True  # approved earlier but not executed (a crash or a failed run): retry
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = ? "
                "WHERE approval_id = ? AND status = 'pending' AND expires_at > ?",
                (by, _ts(_now()), approval.id, _ts(_now())),
            )
            won = cursor.rowcount == 1
        return await self.get(approval.id), won

    async def reject(self, approval_id: str, by: str, reason: str) -> Approval:
        """Reject a pending approval, recording who and why.

        Raises:
            ApprovalError: unknown id, no reason, or the approval is no longer pending.
        """
        if not reason.strip():
            raise ApprovalError("Give a reason for the rejection, e.g. --reason 'duplicate of WO-0003'.")
        approval = await self.get(approval_id)
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE approvals SET status = 'rejected', decided_by = ?, decided_at = ?, reason = ? "
                "WHERE approval_id = ? AND status IN ('pending', 'approved')",
                (by, _ts(_now()), reason.strip()[:500], approval.id),
            )
            changed = cursor.rowcount == 1
        if not changed:
            current = await self.get(approval.id)
            raise ApprovalError(
                f"Approval {approval.id} is {current.status.value}; only pending or not yet executed ones can be "
                "rejected."
            )
        return await self.get(approval.id)


_STATUS_SQL: dict[ApprovalStatus, str] = {
    ApprovalStatus.PENDING: "WHERE status = 'pending' AND expires_at > ?",
    ApprovalStatus.APPROVED: "WHERE status = 'approved' AND expires_at > ?",
    ApprovalStatus.EXPIRED: "WHERE status IN ('pending', 'approved') AND expires_at <= ?",
    ApprovalStatus.EXECUTED: "WHERE status = 'executed'",
    ApprovalStatus.REJECTED: "WHERE status = 'rejected' AND refused_at IS NULL",
    ApprovalStatus.REFUSED: "WHERE status = 'rejected' AND refused_at IS NOT NULL",
}
"""The stored condition of each reported status: pending or approved past its expiry reports as expired, and a
rejected row with ``refused_at`` (refused at execution, `governance.grants.refuse`) as refused."""


def _status_filter(status: ApprovalStatus | None, now: str) -> tuple[str, tuple[str, ...]]:
    if status is None:
        return "", ()
    where = _STATUS_SQL[status]
    return where, (now,) if "?" in where else ()


async def _check_pending_limit(conn: Any, principal: str, limit: int, now: datetime) -> None:
    """Refuse a new parked action when ``principal`` already has ``limit`` pending (names compared as people)."""
    async with conn.execute(
        "SELECT requested_by, COUNT(*) AS n FROM approvals WHERE status = 'pending' AND expires_at > ? "
        "GROUP BY requested_by",
        (_ts(now),),
    ) as cursor:
        rows = await cursor.fetchall()
    pending = sum(int(row["n"]) for row in rows if same_principal(row["requested_by"], principal))
    if pending >= limit:
        raise PendingLimitError(
            f"{principal} already has {pending} actions waiting for a supervisor's approval, the most "
            f"Approval.MaxPendingPerPrincipal allows ({limit}). This one was not parked and nothing was executed. "
            "A supervisor must approve or reject some of them first (`pumpops approvals list --status pending`); "
            "then propose it again.",
            pending=pending,
            limit=limit,
        )


def _approval(row: Any) -> Approval:
    status = ApprovalStatus(row["status"])
    if status in (ApprovalStatus.PENDING, ApprovalStatus.APPROVED) and row["expires_at"] <= _ts(_now()):
        status = ApprovalStatus.EXPIRED
    if status is ApprovalStatus.REJECTED and row["refused_at"] is not None:
        status = ApprovalStatus.REFUSED
    result = row["result"]
    if result is not None:
        try:
            result = json.loads(result)
        except ValueError:
            pass
    return Approval(
        id=row["approval_id"],
        function=row["function"],
        arguments=json.loads(row["arguments"]),
        status=status,
        requested_by=row["requested_by"],
        requested_at=row["requested_at"],
        expires_at=row["expires_at"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        reason=row["reason"],
        executed_at=row["executed_at"],
        result=result,
        preconditions=[Precondition.model_validate(p) for p in json.loads(row["preconditions"] or "[]")],
        refused_at=row["refused_at"],
    )
