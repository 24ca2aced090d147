"""Who is asking, set by the door (CLI, chat, MCP, approvals), never taken from kernel arguments.

SK lets a model- or client-supplied argument override any parameter, so anything in
`KernelArguments` is attacker-controlled; the principal and session travel in a context variable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from governance.roles import Proof, Role


@dataclass(frozen=True)
class CallContext:
    """The identity behind an invocation and the door it came through.

    ``principal`` is who the door knows is asking (``proof`` says how); ``label`` is a name the caller
    gave for themselves (``--as``, an MCP client's name), recorded beside the principal and never trusted;
    ``roles`` are the principal's, looked up by the door.
    """

    principal: str
    session: str | None = None
    door: str = "direct"
    proof: Proof = Proof.NONE
    roles: frozenset[Role] = field(default_factory=frozenset)
    label: str | None = None

    def has(self, role: Role) -> bool:
        """Whether the principal holds ``role`` (roles count only for a proven principal)."""
        return role in self.roles and self.proof.proven

    @property
    def audit_name(self) -> str:
        """The principal as the audit trail records it: an asserted label shown beside it, marked as asserted."""
        return self.principal if not self.label else f"{self.principal} (asserted: {self.label})"


_CURRENT: ContextVar[CallContext | None] = ContextVar("pumpops_call_context", default=None)

ANONYMOUS = CallContext(principal="anonymous", door="unknown")


def current_call() -> CallContext:
    """The context set by the door, or an anonymous one when no door set it (an integrator's kernel)."""
    return _CURRENT.get() or ANONYMOUS


@contextmanager
def acting_as(context: CallContext) -> Iterator[CallContext]:
    """Run the enclosed work as ``context`` (tasks created inside inherit it)."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)
