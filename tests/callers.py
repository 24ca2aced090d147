"""Callers for in-process tests: people proven as their door would prove them (an OS user), with roles."""

from __future__ import annotations

from governance.identity import CallContext
from governance.roles import Proof, Role


def person(name: str, *roles: Role, door: str = "approvals") -> CallContext:
    """``name`` proven as an OS user holding ``roles``."""
    return CallContext(principal=name, door=door, proof=Proof.OS_USER, roles=frozenset(roles))


def supervisor(name: str) -> CallContext:
    """``name`` proven as an OS user with the supervisor role: may approve and reject others' proposals."""
    return person(name, Role.SUPERVISOR)
