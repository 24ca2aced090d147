"""FUNCTION_INVOCATION filter: record each call's outcome for the turn, and never leak internals.

A PumpOps error is a message written for the model and passes through unchanged. Any other
exception is a bug or an infrastructure fault: it is logged with its traceback and replaced by a
generic message, so no path, SQL or stack trace reaches a model or client.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext

from core.errors import PumpOpsError
from kernel_setup.arguments import ToolArgumentError
from kernel_setup.filters.audit import STATUS_KEY

logger = logging.getLogger(__name__)


class InternalToolError(PumpOpsError):
    """A function failed for a reason that is not the caller's to fix."""


@dataclass
class CallOutcome:
    """How one tool call ended: ok, error, denied, pending_approval or rejected."""

    status: str = "ok"
    error: str | None = None


_OUTCOME: ContextVar[CallOutcome | None] = ContextVar("pumpops_call_outcome", default=None)


@contextmanager
def tracking(outcome: CallOutcome) -> Iterator[CallOutcome]:
    """Collect the outcome of the invocation run inside this block."""
    token = _OUTCOME.set(outcome)
    try:
        yield outcome
    finally:
        _OUTCOME.reset(token)


async def track_outcome(
    context: FunctionInvocationContext, next: Callable[[FunctionInvocationContext], Awaitable[None]]
) -> None:
    """Run the function; note its status; turn unexpected exceptions into a safe message."""
    outcome = _OUTCOME.get()
    try:
        await next(context)
    except ToolArgumentError as exc:
        if outcome is not None:
            outcome.status, outcome.error = "rejected", str(exc)
        raise
    except PumpOpsError as exc:
        if outcome is not None:
            outcome.status, outcome.error = "error", str(exc)
        raise
    except Exception as exc:
        logger.exception("Function %s failed unexpectedly", context.function.fully_qualified_name)
        message = (
            f"{context.function.fully_qualified_name} failed unexpectedly ({type(exc).__name__}). "
            "Try again; if it keeps failing, tell the operator to check the PumpOps logs."
        )
        if outcome is not None:
            outcome.status, outcome.error = "error", message
        raise InternalToolError(message) from exc
    if outcome is not None and context.result is not None:
        status = (context.result.metadata or {}).get(STATUS_KEY)
        if isinstance(status, str):
            outcome.status = status
