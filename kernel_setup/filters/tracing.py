"""FUNCTION_INVOCATION filter: one ``execute_tool {gen_ai.tool.name}`` span per kernel invocation.

Installed outermost, only when tracing is on, so its span covers the audit filter (which puts the audit row's id
and hash on it, `kernel_setup.tracing.note_audit_row`) and every filter after it, at every door.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext

from kernel_setup.arguments import ToolArgumentError
from kernel_setup.filters.audit import STATUS_KEY
from kernel_setup.tracing import (
    OPERATION,
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_CALL_RESULT,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_OUTCOME,
    TOOL_TYPE,
    Tracing,
    current_tool_call_id,
)


class TraceFilter:
    """Wrap each invocation in an ``execute_tool`` span with its call id, outcome and (with content) text."""

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing

    async def __call__(
        self,
        context: FunctionInvocationContext,
        next: Callable[[FunctionInvocationContext], Awaitable[None]],
    ) -> None:
        """Run the rest of the chain inside the span; exceptions pass through unchanged."""
        function = context.function
        attributes: dict[str, str] = {
            OPERATION: "execute_tool",
            TOOL_NAME: function.fully_qualified_name,
            TOOL_TYPE: "function",
        }
        if function.description:
            attributes[TOOL_DESCRIPTION] = function.description
        if (call_id := current_tool_call_id()) is not None:
            attributes[TOOL_CALL_ID] = call_id
        if self._tracing.include_content:
            attributes[TOOL_CALL_ARGUMENTS] = self._tracing.content(dict(context.arguments))
        with self._tracing.tool_span(f"execute_tool {function.fully_qualified_name}", attributes) as span:
            try:
                await next(context)
            except ToolArgumentError:
                if span is not None:
                    span.set_attribute(TOOL_OUTCOME, "rejected")
                raise
            except BaseException:
                if span is not None:
                    span.set_attribute(TOOL_OUTCOME, "error")
                raise
            if span is None:
                return
            result = context.result
            status = None if result is None else (result.metadata or {}).get(STATUS_KEY)
            span.set_attribute(TOOL_OUTCOME, "ok" if status is None else str(getattr(status, "value", status)))
            if self._tracing.include_content and result is not None and result.value is not None:
                span.set_attribute(TOOL_CALL_RESULT, self._tracing.content(result.value))
