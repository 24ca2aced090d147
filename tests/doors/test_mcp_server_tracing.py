"""The MCP door traced: a client's ``_meta.traceparent`` becomes the parent of the server's spans."""

from __future__ import annotations

from pathlib import Path

from mcp import types
from mcp.shared.memory import create_connected_server_and_client_session
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from doors.mcp_server import UNKNOWN_TOOL_SPAN, PumpOpsMcpServer
from kernel_setup import open_app
from tests.tracing_support import all_attribute_text, named, parent_of, span_id, traced_settings

CLIENT = types.Implementation(name="pumpops-tests", version="1.0")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


async def test_a_tools_call_with_a_traceparent_continues_the_clients_trace(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path), span_exporter=exporter) as app:
        async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=CLIENT) as session:
            result = await session.call_tool(
                "assets-get_pump_details",
                {"pump_id": "PUMP-007"},
                meta={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
            )
        row = (await app.audit.tail(1))[0]
    assert not result.isError
    spans = exporter.get_finished_spans()
    [server] = named(spans, "tools/call assets-get_pump_details")
    [tool] = named(spans, "execute_tool assets-get_pump_details")
    assert server.context is not None and tool.context is not None
    assert (server.context.trace_id, parent_of(server)) == (int(TRACE_ID, 16), int(PARENT_ID, 16))
    assert server.parent is not None and server.parent.is_remote
    assert (tool.context.trace_id, parent_of(tool)) == (int(TRACE_ID, 16), span_id(server))
    assert server.attributes is not None and server.attributes["mcp.method.name"] == "tools/call"
    assert tool.attributes is not None and tool.attributes["pumpops.audit.id"] == row.id
    assert "PUMP-007" not in all_attribute_text(spans)


async def test_a_tools_call_without_a_traceparent_starts_its_own_trace(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path), span_exporter=exporter) as app:
        async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=CLIENT) as session:
            await session.call_tool("assets-get_system_summary", {})
    [server] = named(exporter.get_finished_spans(), "tools/call")
    [tool] = named(exporter.get_finished_spans(), "execute_tool")
    assert parent_of(server) is None and parent_of(tool) == span_id(server)


async def test_a_malformed_traceparent_is_ignored_and_the_call_still_answers(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path), span_exporter=exporter) as app:
        async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=CLIENT) as session:
            result = await session.call_tool("assets-get_system_summary", {}, meta={"traceparent": "not-a-trace"})
    assert not result.isError
    [server] = named(exporter.get_finished_spans(), "tools/call")
    assert parent_of(server) is None


async def test_an_unknown_tool_gets_a_fixed_span_name_and_none_of_the_clients_text_on_the_span(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    invented = "evil-tool_" + "x" * 200
    async with open_app(traced_settings(tmp_path), span_exporter=exporter) as app:
        async with create_connected_server_and_client_session(PumpOpsMcpServer(app), client_info=CLIENT) as session:
            result = await session.call_tool(invented, {})
            known = await session.call_tool("assets.get_system_summary", {})
    spans = exporter.get_finished_spans()
    assert result.isError and not known.isError
    [unknown] = [span for span in spans if span.name == UNKNOWN_TOOL_SPAN]
    assert unknown.attributes is not None and "gen_ai.tool.name" not in unknown.attributes
    assert invented not in all_attribute_text(spans) and all(invented not in span.name for span in spans)
    # a known tool is named as the kernel names it, whichever separator the client used
    [server] = named(spans, "tools/call assets-get_system_summary")
    assert server.attributes is not None and server.attributes["gen_ai.tool.name"] == "assets-get_system_summary"
