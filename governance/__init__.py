"""Governed writes: parked approvals, grants that write services redeem, intent keys for idempotency."""

from governance.approvals import (
    APPROVAL_ID,
    DEFAULT_PAGE,
    MAX_PAGE,
    Approval,
    ApprovalDecision,
    ApprovalPage,
    ApprovalStatus,
    ApprovalStore,
    DecisionOutcome,
)
from governance.errors import ApprovalError, ApprovalRequiredError, PendingLimitError, PrincipalError
from governance.grants import Grant, active_grant, complete, granting, redeem, refuse
from governance.intent import args_hash, canonical_json, intent_key
from governance.preconditions import CheckedWrite, Precondition, PreconditionError
from governance.principals import principal_key, principal_name, same_principal, show_hidden

__all__ = [
    "APPROVAL_ID",
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "Approval",
    "ApprovalDecision",
    "ApprovalError",
    "ApprovalPage",
    "ApprovalRequiredError",
    "ApprovalStatus",
    "ApprovalStore",
    "CheckedWrite",
    "DecisionOutcome",
    "Grant",
    "PendingLimitError",
    "Precondition",
    "PreconditionError",
    "PrincipalError",
    "active_grant",
    "args_hash",
    "canonical_json",
    "complete",
    "granting",
    "intent_key",
    "principal_key",
    "principal_name",
    "redeem",
    "refuse",
    "same_principal",
    "show_hidden",
]
