"""Errors of the approval gate, worded for the model, the operator and the supervisor."""

from __future__ import annotations

from core.errors import PumpOpsError


class ApprovalError(PumpOpsError):
    """An approval could not be decided (unknown id, expired, already decided, self-approval)."""


class SelfApprovalError(ApprovalError):
    """The requester of a parked write tried to approve it (the four-eyes rule)."""


class PendingLimitError(ApprovalError):
    """A requester already has as many actions pending as `Approval.MaxPendingPerPrincipal` allows."""

    def __init__(self, message: str, *, pending: int, limit: int) -> None:
        super().__init__(message)
        self.pending = pending
        self.limit = limit


class ApprovalRequiredError(PumpOpsError):
    """A write was attempted without a valid grant from the approvals service."""


class PrincipalError(PumpOpsError):
    """A principal name was refused: empty, too long, hidden characters, or letters of mixed scripts."""


class RoleError(PumpOpsError):
    """A principal lacks the role an action needs (approving, rejecting, reading the audit trail)."""
