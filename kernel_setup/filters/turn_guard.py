"""AUTO_FUNCTION_INVOCATION filter: stop a turn whose model repeats a call with the same arguments.

This runs only for model-issued calls; budgets that belong to a turn never apply to direct or MCP calls.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from semantic_kernel.filters.auto_function_invocation.auto_function_invocation_context import (
    AutoFunctionInvocationContext,
)
from semantic_kernel.functions.function_result import FunctionResult


@dataclass
class TurnGuard:
    """Calls seen in this turn, and the first repeated one."""

    seen: set[str] = field(default_factory=set)
    repeated: str | None = None


_TURN: ContextVar[TurnGuard | None] = ContextVar("pumpops_turn_guard", default=None)


@contextmanager
def guarding(guard: TurnGuard) -> Iterator[TurnGuard]:
    """Apply loop detection to model calls made inside this block."""
    token = _TURN.set(guard)
    try:
        yield guard
    finally:
        _TURN.reset(token)


def call_key(name: str, arguments: object) -> str:
    """Canonical identity of a call: function name plus arguments as sorted JSON."""
    return name + json.dumps(arguments, sort_keys=True, default=str, ensure_ascii=False)


async def stop_repeated_calls(
    context: AutoFunctionInvocationContext, next: Callable[[AutoFunctionInvocationContext], Awaitable[None]]
) -> None:
    """Terminate the turn instead of running a call already made in it."""
    guard = _TURN.get()
    if guard is None:
        await next(context)
        return
    key = call_key(context.function.fully_qualified_name, dict(context.arguments or {}))
    if key in guard.seen:
        guard.repeated = guard.repeated or context.function.fully_qualified_name
        context.function_result = FunctionResult(
            function=context.function.metadata,
            value=(
                f"Loop detected: {context.function.fully_qualified_name} was already called with these "
                "arguments in this turn. Answer from the results you have."
            ),
        )
        context.terminate = True
        return
    guard.seen.add(key)
    await next(context)
