"""Who is asking, set by the door (CLI, chat, MCP, approvals), never taken from kernel arguments.

SK lets a model- or client-supplied argument override any parameter, so anything in
`KernelArguments` is attacker-controlled; the principal and session travel in a context variable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class CallContext:
    """The identity behind an invocation and the door it came through."""

    principal: str
    session: str | None = None
    door: str = "direct"


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
