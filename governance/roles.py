"""Roles and proofs: what a principal may do, and how the door that named it knows who it is.

Three roles: an ``operator`` asks, reads and proposes writes; a ``supervisor`` also approves and rejects
parked writes; an ``auditor`` reads the audit trail. Roles belong to proven principals only: an OS user
(the account running a local door), a static API token, or a verified OAuth access token. A name the
caller typed (``--as``, an MCP client's self-declared name) is an asserted label: it is recorded next
to the proven principal and never grants a role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum


class Role(str, Enum):
    """What a principal may do."""

    OPERATOR = "operator"
    SUPERVISOR = "supervisor"
    AUDITOR = "auditor"


class Proof(str, Enum):
    """How the door knows who the principal is."""

    OS_USER = "os_user"
    """The operating-system account running the process (local doors: CLI, chat, MCP over stdio)."""
    TOKEN = "token"
    """A static API token from the tokens file (MCP over HTTP)."""
    OAUTH = "oauth"
    """A verified OAuth 2.1 access token: issuer, signature, audience and expiry checked (MCP over HTTP)."""
    SERVICE = "service"
    """The process itself acting on its own (automatic triage, the telemetry service)."""
    NONE = "none"
    """Nobody proved anything: an integrator's kernel invoked without a door, or an unauthenticated loopback client."""

    @property
    def proven(self) -> bool:
        """Whether a person's identity stands behind it (decisions need one)."""
        return self in (Proof.OS_USER, Proof.TOKEN, Proof.OAUTH)


def roles_for(name: str, assignments: Mapping[str, Iterable[Role]], default: Iterable[Role]) -> frozenset[Role]:
    """The roles of the principal ``name``: ``default`` plus what ``assignments`` give it.

    A role is granted to the exact name it was assigned to (spaces around it aside): ``Alice``, or ``alice``
    spelled with a Cyrillic a, is not ``alice``. Comparing loosely is right for refusing (four eyes:
    `principal_key`) and wrong for granting, where a name someone can choose (a token name, a JWT claim) would
    inherit another's roles.
    """
    granted = set(default)
    for assigned, roles in assignments.items():
        if assigned.strip() == name:
            granted.update(roles)
    return frozenset(granted)
