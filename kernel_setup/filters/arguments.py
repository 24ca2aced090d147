"""FUNCTION_INVOCATION filter: arguments are checked and typed before the function runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext

from kernel_setup.arguments import coerce_arguments


async def validate_arguments(
    context: FunctionInvocationContext, next: Callable[[FunctionInvocationContext], Awaitable[None]]
) -> None:
    """Replace the call's arguments by their checked, typed form; raise a recovery message otherwise."""
    checked = coerce_arguments(context.function.metadata, context.arguments)
    context.arguments.clear()
    context.arguments.update(checked)
    await next(context)
