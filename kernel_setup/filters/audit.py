"""FUNCTION_INVOCATION filter: every invocation leaves one audit row, whatever its outcome.

Install it as the outermost FUNCTION_INVOCATION filter (add it to the kernel before any other), so it
sees the arguments as the caller sent them and the outcome every later filter decided: model tool
calls, direct `kernel.invoke`, `pumpops tools call` and MCP all pass through it.

Later filters signal an outcome other than ``ok`` by setting ``context.result`` with metadata
``{"pumpops_status": "denied" | "pending_approval", "pumpops_detail": "<e.g. the approval id>"}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext
from semantic_kernel.functions.function_result import FunctionResult

from governance.audit_log import AuditLog, AuditOutcome
from kernel_setup.arguments import ToolArgumentError
from kernel_setup.tracing import note_audit_row
from plugins.declarations import traits_of

STATUS_KEY = "pumpops_status"
"""Result metadata key a later filter sets to report ``denied`` or ``pending_approval``."""

AUDITED_KEY = "pumpops_audited"
"""Result metadata the approval gate sets when the write's own transaction appended the audit row."""

DETAIL_KEY = "pumpops_detail"
"""Result metadata key for a short detail to keep with the row, e.g. an approval id."""


class AuditFilter:
    """Record each invocation in the audit log after it ends; exceptions pass through unchanged.

    With ``record_reads=False`` (``Audit.Enabled: false``) successful and failed reads go unrecorded;
    writes, approvals and rejections are recorded whatever the setting. An argument refused by the
    argument check is recorded as ``rejected``; any other exception as
    ``error`` with its message. If the row cannot be written the `AuditError` propagates: an
    invocation the trail does not show is not reported as a success.
    """

    def __init__(self, log: AuditLog, *, record_reads: bool = True) -> None:
        self._log = log
        self._record_reads = record_reads

    @property
    def log(self) -> AuditLog:
        """The audit log this filter writes to."""
        return self._log

    async def __call__(
        self,
        context: FunctionInvocationContext,
        next: Callable[[FunctionInvocationContext], Awaitable[None]],
    ) -> None:
        """Run the rest of the filter chain and the function, then append the audit row."""
        if not self._record_reads and traits_of(context.function).read_only:
            await next(context)  # Audit.Enabled=false silences reads only; writes are always recorded
            return
        arguments = dict(context.arguments)  # before later filters replace them with checked values
        started = time.perf_counter()
        try:
            await next(context)
        except ToolArgumentError as exc:
            await self._record(context, arguments, started, AuditOutcome.REJECTED, str(exc))
            raise
        except asyncio.CancelledError:
            await self._record(context, arguments, started, AuditOutcome.ERROR, "cancelled before it finished")
            raise
        except Exception as exc:
            await self._record(context, arguments, started, AuditOutcome.ERROR, str(exc) or type(exc).__name__)
            raise
        if context.result is not None and context.result.metadata.get(AUDITED_KEY):
            return  # the write's own transaction already appended this invocation's row
        outcome, detail = _outcome_of(context.result)
        await self._record(context, arguments, started, outcome, detail, result=context.result)

    async def _record(
        self,
        context: FunctionInvocationContext,
        arguments: Mapping[str, Any],
        started: float,
        outcome: AuditOutcome,
        detail: str | None,
        *,
        result: FunctionResult | None = None,
    ) -> None:
        row = await self._log.record(
            function=context.function.fully_qualified_name,
            arguments=arguments,
            outcome=outcome,
            effect=traits_of(context.function).effect,
            detail=detail,
            duration_ms=(time.perf_counter() - started) * 1000,
            result_text=None if result is None or result.value is None else str(result.value),
        )
        note_audit_row(row)  # the execute_tool span, when traced, names the row


def _outcome_of(result: FunctionResult | None) -> tuple[AuditOutcome, str | None]:
    """The outcome a later filter reported in the result metadata, ``ok`` by default."""
    metadata = {} if result is None else result.metadata
    status = metadata.get(STATUS_KEY)
    detail = metadata.get(DETAIL_KEY)
    detail_text = None if detail is None else str(detail)
    if status is None:
        return AuditOutcome.OK, detail_text
    try:
        return AuditOutcome(getattr(status, "value", status)), detail_text
    except ValueError:
        note = f"unrecognised {STATUS_KEY} {status!r}"
        return AuditOutcome.OK, note if detail_text is None else f"{note}; {detail_text}"
