"""Property-based fuzzing of every kernel function's arguments through `kernel.invoke` with all filters.

Whatever arrives — wrong types, huge or broken unicode, extreme numbers, JSON inside strings, nulls,
missing or unknown keys — the call ends as a normal result or as a `KernelInvokeException` whose cause
is a PumpOps error carrying a recovery message; nothing is written; every call leaves one audit row.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from semantic_kernel.exceptions import KernelInvokeException
from semantic_kernel.functions import KernelArguments

from governance.identity import CallContext, acting_as
from kernel_setup import AppContext, open_app
from kernel_setup.direct_calls import pumpops_cause, resolve_function, tool_definitions
from kernel_setup.filters.outcome import InternalToolError
from memory import IngestManifest, ingest
from tests.security.fakes import HashEmbedder
from tests.security.strategies import arguments_for
from tests.security.support import audit_count, fuzz_settings, leak_in, portal, write_state

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
FUNCTIONS = [
    "alarms-acknowledge_alarm",
    "alarms-list_alarms",
    "assets-get_pump_details",
    "assets-get_system_summary",
    "assets-list_pumps",
    "docs-search_documentation",
    "sensors-get_sensor_readings",
    "sensors-get_sensor_trend",
    "work_orders-create_work_order",
    "work_orders-get_approval_status",
    "work_orders-list_work_orders",
]
PINNED: list[Any] = ["\ud800", "PUMP-\udfff007", 10**5000, [10**5000], {"k": "\ud800"}, math.nan, "\x00"]
MANUAL = "# Bearing checks\n\n## Vibration\n\nMeasure vibration at the drive end; zone D needs action.\n"


@pytest.fixture(scope="module")
def tally() -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    yield counts
    print(
        f"\nfuzz (kernel.invoke): {counts['cases']} cases over {counts['functions']} functions — "
        f"ok {counts['ok']}, pending_approval {counts['pending_approval']}, refused {counts['refused']}, "
        f"unhandled {counts['unhandled']}, writes executed 0, audit rows == invocations"
    )


async def invoke(app: AppContext, name: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """Invoke as an untrusted caller; return (outcome, text) where outcome is ok, pending_approval or refused."""
    function = resolve_function(app.kernel, name)
    kernel_arguments = KernelArguments()
    kernel_arguments.update(arguments)  # not **: a key such as "settings" must stay an argument
    with acting_as(CallContext(principal="fuzzer", session="fuzz", door="test")):
        try:
            result = await app.kernel.invoke(function, kernel_arguments)
        except KernelInvokeException as exc:
            cause = pumpops_cause(exc)
            assert cause is not None, f"{name}({arguments!r:.300}) raised a non-PumpOps error: {exc!r}"
            assert not isinstance(cause, InternalToolError), f"{name}({arguments!r:.300}) hit a bug: {exc.__cause__!r}"
            return "refused", str(cause)
    assert result is not None
    text = str(result.value)
    return ("pending_approval" if '"status":"pending_approval"' in text else "ok"), text


def _echo(arguments: dict[str, Any]) -> str:
    try:
        return repr(arguments)
    except ValueError:  # an integer past the 4300-digit limit
        return ""


async def prepare(app: AppContext) -> None:
    """A small manuals index, so searches run end to end."""
    (app.settings.resolve("manual.md")).write_text(MANUAL)
    await ingest([app.settings.resolve("manual.md")], app.manuals, IngestManifest(app.db, "manuals"))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_fuzzed_arguments_end_as_a_result_or_a_recovery_message_and_write_nothing(
    name: str, tmp_path: Path, tally: Counter[str]
) -> None:
    with (
        portal() as loop,
        loop.wrap_async_context_manager(open_app(fuzz_settings(tmp_path), embedder=HashEmbedder())) as app,
    ):
        definitions = {d["function"]["name"]: d for d in tool_definitions(app.kernel)}
        assert sorted(definitions) == FUNCTIONS  # a new function must join the fuzz
        loop.call(prepare, app)
        before = loop.call(write_state, app)
        first_row = loop.call(audit_count, app)
        invocations = 0

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        )
        @given(arguments=arguments_for(definitions[name]))
        def check(arguments: dict[str, Any]) -> None:
            one(arguments)

        def one(arguments: dict[str, Any]) -> None:
            nonlocal invocations
            invocations += 1
            tally["cases"] += 1
            rows_before = loop.call(audit_count, app)
            try:
                outcome, text = loop.call(invoke, app, name, arguments)
            except AssertionError:
                tally["unhandled"] += 1
                raise
            tally[outcome] += 1
            if outcome == "refused":
                assert text.strip(), f"empty refusal for {arguments!r:.300}"
                leak = leak_in(text, tmp_path, echo=_echo(arguments))
                assert leak is None, f"refusal leaks {leak!r}: {text[:300]}"
            assert loop.call(audit_count, app) - rows_before == 1, "the call left no audit row (or two)"
            after = loop.call(write_state, app)
            assert after.work_orders == before.work_orders and after.acknowledged == before.acknowledged
            assert after.idempotency == before.idempotency
            assert set(after.statuses) <= {"pending"}, f"an approval left pending: {after.statuses}"

        properties = definitions[name]["function"]["parameters"]["properties"]
        for value in PINNED:  # values that once broke the audit trail or the argument check, on every parameter
            for parameter in [*properties, "unknown"]:
                one({parameter: value})
        one({"\ud800": 1})
        check()
        tally["functions"] += 1
        assert loop.call(audit_count, app) - first_row == invocations
        assert loop.call(app.audit.verify) is None
