"""A model turn's tool calls, each run through the kernel, or refused and audited before it would run.

`ToolCalls.run_round` runs one model turn's calls: reads concurrently, writes one at a time in call order.

Calls go through `kernel.invoke_function_call`, so AUTO and FUNCTION invocation filters apply. Calls SK would
reject before any filter (an unknown tool, arguments that are not a JSON object or break the schema) and calls past
`MAX_CALLS_PER_MESSAGE` are refused here and recorded by the `RejectionRecorder`, so the audit trail has no gaps.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.contents import ChatHistory
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.function_result_content import FunctionResultContent
from semantic_kernel.exceptions import KernelException

from checks.evidence import Evidence
from governance.audit_log import RejectionRecorder
from governance.effects import Effect
from governance.identity import current_call
from kernel_setup.arguments import ToolArgumentError, coerce_arguments
from kernel_setup.filters.outcome import CallOutcome, tracking
from kernel_setup.shaping import result_text
from kernel_setup.tracing import calling
from plugins.declarations import traits_of
from turn.events import ToolCallRecord
from turn.messages import approval_id_of, arguments_of, call_summary, is_json_object
from turn.units import Conversion, convert_result

__all__ = ["MAX_CALLS_PER_MESSAGE", "ToolCalls"]

MAX_CALLS_PER_MESSAGE = 16


Refusal = Callable[[FunctionCallContent], str | None]
"""Why a call is refused before it runs, or None: a turn's policy over the model's calls."""


class ToolCalls:
    """Runs a turn's tool calls on ``kernel``; refusals before any filter are recorded by ``rejections``."""

    def __init__(self, kernel: Kernel, rejections: RejectionRecorder | None = None) -> None:
        self._kernel = kernel
        self._rejections = rejections

    def is_read(self, call: FunctionCallContent) -> bool:
        """Whether ``call`` names a declared read (an unknown tool reads nothing, since it will not run)."""
        return self.effect(call) is Effect.READ

    def effect(self, call: FunctionCallContent) -> Effect:
        """The function's declared effect; an unknown function is rejected without running, so it reads nothing."""
        try:
            function = self._kernel.get_function(call.plugin_name, call.function_name)
        except KernelException:
            return Effect.READ
        return traits_of(function).effect

    async def run_round(
        self,
        calls: Sequence[FunctionCallContent],
        request_index: int,
        evidence: Evidence,
        conversions: Sequence[Conversion] = (),
        refuse: Refusal | None = None,
    ) -> AsyncIterator[tuple[FunctionCallContent, str, ToolCallRecord]]:
        """Run one model turn's ``calls``: reads concurrently, writes one at a time in call order; each as it ends.

        Calls past `MAX_CALLS_PER_MESSAGE` go with the writes and are refused one by one, without running; the
        results get the ``conversions`` (`run_one`); ``refuse`` may refuse a call before it runs (`run_one`).
        """
        allowed = calls[:MAX_CALLS_PER_MESSAGE]
        reads = [c for c in allowed if self.is_read(c)]
        writes = [c for c in allowed if not self.is_read(c)]
        writes += list(calls[MAX_CALLS_PER_MESSAGE:])  # refused one by one, without running

        Finished = list[tuple[FunctionCallContent, str, ToolCallRecord]]

        async def run_reads(call: FunctionCallContent) -> Finished:
            return [await self.run_one(call, len(calls), request_index, evidence, conversions, refuse)]

        async def run_writes() -> Finished:
            return [
                await self.run_one(call, len(calls), request_index, evidence, conversions, refuse) for call in writes
            ]

        futures = [asyncio.ensure_future(run_reads(call)) for call in reads]
        futures.append(asyncio.ensure_future(run_writes()))
        for future in asyncio.as_completed(futures):
            for finished in await future:
                yield finished

    async def run_one(
        self,
        call: FunctionCallContent,
        count: int,
        request_index: int,
        evidence: Evidence,
        conversions: Sequence[Conversion] = (),
        refuse: Refusal | None = None,
    ) -> tuple[FunctionCallContent, str, ToolCallRecord]:
        """Run one call through the kernel (its filters apply), or refuse it first; its text and record.

        A result that ran gets its values in the units the operator asked for beside them (``conversions``:
        `turn.units`). The result is added once to ``evidence`` as it arrives.
        """
        started = time.perf_counter()
        arguments = arguments_of(call)
        rejection = self._rejection(call, arguments)
        if rejection is None and refuse is not None:
            rejection = refuse(call)  # a turn's policy (a write the operator did not ask for): audited as rejected
        if rejection is None and (call.index or 0) >= MAX_CALLS_PER_MESSAGE:
            rejection = (
                f"Not run: at most {MAX_CALLS_PER_MESSAGE} tool calls are executed per message. "
                "Ask for fewer things at once, or use a list_ or get_sensor_readings tool that covers many pumps."
            )
        outcome = CallOutcome()
        if rejection is not None:
            outcome.status, outcome.error = "rejected", rejection
            if self._rejections is not None:
                await self._rejections.record_rejected(call.name or "", arguments, rejection, current_call())
            text = json.dumps({"error": rejection})
        else:
            scratch = ChatHistory()
            with tracking(outcome), calling(call.id):
                stopped = await self._kernel.invoke_function_call(
                    function_call=call,
                    chat_history=scratch,
                    function_call_count=count,
                    request_index=request_index,
                    is_streaming=True,
                )
            results = [i for m in scratch.messages for i in m.items if isinstance(i, FunctionResultContent)]
            raw = result_text(results[0].result) if results else ""
            if stopped is not None and stopped.terminate:
                # The loop guard answered instead of the function: nothing ran, so the runner audits it.
                outcome.status, outcome.error = "rejected", raw
                if self._rejections is not None:
                    await self._rejections.record_rejected(call.name or "", arguments, raw, current_call())
            if outcome.status == "error":
                text = json.dumps({"error": outcome.error or raw})
            else:
                text = convert_result(raw, conversions) if outcome.status == "ok" else raw
        result = evidence.add(call.name or "", text, status=outcome.status, effect=self.effect(call))
        record = ToolCallRecord(
            name=call.name or "",
            arguments=arguments,
            status=outcome.status,
            summary=call_summary(outcome, result),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            approval_id=approval_id_of(result) if outcome.status == "pending_approval" else None,
        )
        return call, text, record

    def _rejection(self, call: FunctionCallContent, arguments: dict[str, Any]) -> str | None:
        advertised = {m.fully_qualified_name for m in self._kernel.get_full_list_of_function_metadata()}
        if call.name not in advertised:
            return (
                f"Unknown tool {call.name!r}. Call one of the listed tools, by its exact name: "
                f"{', '.join(sorted(advertised))}."
            )
        function = self._kernel.get_function(call.plugin_name, call.function_name)
        raw = call.arguments
        if raw is not None and not isinstance(raw, dict) and not (isinstance(raw, str) and is_json_object(raw)):
            return f'Arguments for {call.name} must be a JSON object, e.g. {{"pump_id": "PUMP-007"}}.'
        # SK refuses missing and unexpected parameters itself, before any filter: unaudited, in its own words. This
        # check refuses them (and bad values) first; the argument filter, which every door passes, coerces again.
        try:
            coerce_arguments(function.metadata, arguments)
        except ToolArgumentError as exc:
            return str(exc)
        return None
