"""Fuzzed MCP `tools/call` requests through the official client, in memory, against the PumpOps server.

Every call is answered (a result, or ``isError`` with a recovery message), nothing is written, and every
call — including those refused before the kernel — leaves exactly one audit row.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import types
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from doors.mcp_server import PumpOpsMcpServer
from kernel_setup import AppContext, open_app
from kernel_setup.direct_calls import tool_definitions
from tests.security.fakes import HashEmbedder
from tests.security.strategies import HOSTILE, arguments_for
from tests.security.support import audit_count, fuzz_settings, leak_in, portal, write_state

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES_MCP", "25"))
CLIENT = types.Implementation(name="fuzzer", version="1.0")
WAIT = 30  # seconds: an upper bound on one exchange, never a synchronisation sleep


@pytest.fixture(scope="module")
def tally() -> Iterator[Counter[str]]:
    counts: Counter[str] = Counter()
    yield counts
    print(
        f"\nfuzz (MCP tools/call): {counts['cases']} cases — ok {counts['ok']}, isError {counts['error']}, "
        f"unanswered 0, writes executed 0, audit rows == calls"
    )


@asynccontextmanager
async def raw_client(app: AppContext) -> AsyncIterator[Callable[[str, Any], Awaitable[dict[str, Any]]]]:
    """A connected client that sends ``tools/call`` params as given (the SDK client refuses non-object arguments)."""
    server = PumpOpsMcpServer(app)
    ids = itertools.count(1)
    async with create_client_server_memory_streams() as ((client_read, client_write), (server_read, server_write)):

        async def exchange(method: str, params: dict[str, Any] | None) -> dict[str, Any]:
            request = types.JSONRPCRequest(jsonrpc="2.0", id=next(ids), method=method, params=params)
            with anyio.fail_after(WAIT):
                await client_write.send(SessionMessage(types.JSONRPCMessage(request)))
                reply = await client_read.receive()
            assert isinstance(reply, SessionMessage)
            return reply.message.model_dump(by_alias=True, exclude_none=True)

        async def call(name: str, arguments: Any) -> dict[str, Any]:
            return await exchange("tools/call", {"name": name, "arguments": arguments})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, server_read, server_write, server.create_initialization_options())
            init = types.InitializeRequestParams(
                protocolVersion=types.LATEST_PROTOCOL_VERSION,
                capabilities=types.ClientCapabilities(),
                clientInfo=CLIENT,
            )
            await exchange("initialize", init.model_dump(by_alias=True, exclude_none=True))
            notice = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
            await client_write.send(SessionMessage(types.JSONRPCMessage(notice)))
            yield call
            tasks.cancel_scope.cancel()


def _echo(value: object) -> str:
    try:
        return repr(value)
    except ValueError:
        return ""


def test_fuzzed_tool_calls_are_answered_audited_and_write_nothing(tmp_path: Path, tally: Counter[str]) -> None:
    with (
        portal() as loop,
        loop.wrap_async_context_manager(open_app(fuzz_settings(tmp_path), embedder=HashEmbedder())) as app,
        loop.wrap_async_context_manager(raw_client(app)) as call,
    ):
        definitions = tool_definitions(app.kernel)
        names = [d["function"]["name"] for d in definitions]
        requests = st.one_of(
            st.sampled_from(definitions).flatmap(lambda d: st.tuples(st.just(d["function"]["name"]), arguments_for(d))),
            st.tuples(st.sampled_from([*names, "assets-drop_table", "", "assets.get_pump_details "]), HOSTILE),
        )
        before = loop.call(write_state, app)

        @settings(
            max_examples=EXAMPLES * len(names),
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        )
        @given(request=requests)
        def check(request: tuple[str, Any]) -> None:
            name, arguments = request
            tally["cases"] += 1
            rows_before = loop.call(audit_count, app)
            reply = loop.call(call, name, arguments)
            assert "result" in reply, f"no result for {name}({_echo(arguments):.300}): {reply}"
            result = types.CallToolResult.model_validate(reply["result"])
            text = "".join(b.text for b in result.content if isinstance(b, types.TextContent))
            tally["error" if result.isError else "ok"] += 1
            if result.isError:
                assert text.strip(), f"empty error for {name}({_echo(arguments):.300})"
                leak = leak_in(text, tmp_path, echo=f"{name} {_echo(arguments)}")
                assert leak is None, f"error leaks {leak!r}: {text[:300]}"
            assert loop.call(audit_count, app) - rows_before == 1, "the call left no audit row (or two)"
            after = loop.call(write_state, app)
            assert (after.work_orders, after.acknowledged) == (before.work_orders, before.acknowledged)
            assert set(after.statuses) <= {"pending"} and after.idempotency == before.idempotency

        check()
        assert loop.call(app.audit.verify) is None
