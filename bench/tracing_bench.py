"""Tracing bench: what tracing costs a kernel call, off (the default) and on with an in-memory exporter.

1. Off versus no tracing code: with ``Tracing.Enabled`` false no provider is built and no span filter installed;
   what remains on a tool call's path is the disabled hooks (`calling` around the call, `note_audit_row` after its
   audit row, the turn's `Tracing.span` for the call's share). They are timed alone, ``--hooks`` times, and printed
   in ns and as the ratio (kernel call with them) / (kernel call without them).
2. On: the same kernel call (``assets-get_pump_details`` through every filter, audit row included) with tracing off
   and on (an ``InMemorySpanExporter``: the span is built and handed over, not sent), alternated in rounds in one
   run; prints p50 per call and the ratio on/off.

Figures only, not a test.

Run:   .venv/bin/python bench/tracing_bench.py
Smoke: .venv/bin/python bench/tracing_bench.py --calls 50 --rounds 2 --hooks 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from semantic_kernel.functions import KernelArguments

from governance.audit_log import AuditOutcome, AuditRow
from kernel_setup import AppContext, load_settings, open_app
from kernel_setup.tracing import Tracing, calling, note_audit_row


@asynccontextmanager
async def bench_app(folder: Path, *, traced: bool) -> AsyncIterator[tuple[AppContext, InMemorySpanExporter]]:
    name = "on" if traced else "off"
    path = folder / f"{name}.json"
    path.write_text(
        json.dumps({"Database": {"Path": f"{name}.db"}, "Qdrant": {"Path": ":memory:"}, "Tracing": {"Enabled": traced}})
    )
    exporter = InMemorySpanExporter()
    async with open_app(load_settings(path, env={}), span_exporter=exporter) as app:
        yield app, exporter


async def per_call_us(app: AppContext, calls: int) -> list[float]:
    function = app.kernel.get_function("assets", "get_pump_details")
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await app.kernel.invoke(function, KernelArguments(pump_id="PUMP-007"))
        times.append((time.perf_counter() - started) * 1e6)
    return times


def disabled_hooks_ns(iterations: int) -> float:
    """One tool call's disabled tracing path, in ns: `calling`, `note_audit_row`, and one `Tracing.span`."""
    tracing = Tracing.off()
    row = AuditRow(
        id=1,
        at="2026-12-06T00:00:00.000+00:00",
        principal="bench",
        session=None,
        door="bench",
        function="assets-get_pump_details",
        effect=None,
        arguments={},
        outcome=AuditOutcome.OK,
        detail=None,
        duration_ms=None,
        result_digest=None,
        prev_hash="0" * 64,
        row_hash="0" * 64,
    )
    started = time.perf_counter_ns()
    for _ in range(iterations):
        with calling("call_1"), tracing.span("execute_tool assets-get_pump_details", None):
            note_audit_row(row)
    return (time.perf_counter_ns() - started) / iterations


async def main(calls: int, rounds: int, hooks: int) -> None:
    print(f"{platform.platform()}, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        async with bench_app(folder, traced=False) as (off, _), bench_app(folder, traced=True) as (on, exporter):
            await per_call_us(off, 20)  # warm both (first calls compile SQL, build schemas)
            await per_call_us(on, 20)
            off_times: list[float] = []
            on_times: list[float] = []
            for _ in range(rounds):
                off_times += await per_call_us(off, calls)
                on_times += await per_call_us(on, calls)
            spans = len(exporter.get_finished_spans())
    hook_ns = disabled_hooks_ns(hooks)
    off_p50, on_p50 = statistics.median(off_times), statistics.median(on_times)
    print(f"kernel call, tracing off:             p50 {off_p50:8.1f} us  ({len(off_times)} calls)")
    print(f"kernel call, tracing on (in-memory):  p50 {on_p50:8.1f} us  ({len(on_times)} calls, {spans} spans)")
    print(f"on / off:                             {on_p50 / off_p50:.3f}x")
    without = off_p50 - hook_ns / 1000
    print(f"disabled hooks per tool call:         {hook_ns:8.0f} ns  ({hooks} iterations)")
    print(f"off / no tracing code:                {off_p50 / without:.4f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500, help="kernel calls per round and setting")
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds of off and on")
    parser.add_argument("--hooks", type=int, default=200_000, help="iterations of the disabled hooks")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds, args.hooks))
