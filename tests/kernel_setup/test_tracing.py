"""Tracing built by the composition root: off by default with no provider, never global, and the approval span."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from semantic_kernel.functions import KernelArguments

from governance import ApprovalError, args_hash
from governance.identity import CallContext, acting_as
from kernel_setup import AppContext, load_settings, open_app
from kernel_setup.filters.tracing import TraceFilter
from kernel_setup.tracing import build_tracing
from kernel_setup.tracing_settings import TracingExporter, TracingSettings
from tests.callers import supervisor
from tests.tracing_support import all_attribute_text, named, parent_of, span_id, traced_settings

ORDER: dict[str, Any] = {"pump_id": "PUMP-007", "priority": "urgent", "summary": "Inspect DE bearing; 9.4 mm/s zone D"}
GUARDED: dict[str, Any] = {"Agent": {"WritesAskedFor": False}}


async def read(app: AppContext) -> None:
    function = app.kernel.get_function("assets", "get_pump_details")
    await app.kernel.invoke(function, KernelArguments(pump_id="PUMP-007"))


async def propose(app: AppContext, principal: str = "alice") -> str:
    with acting_as(CallContext(principal=principal, session="s1", door="test")):
        function = app.kernel.get_function("work_orders", "create_work_order")
        result = await app.kernel.invoke(function, KernelArguments(**ORDER))
    assert result is not None
    return str(json.loads(str(result.value))["approval_id"])


async def test_tracing_is_off_by_default_and_then_builds_no_provider_installs_no_filter_and_exports_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "appsettings.json"
    path.write_text(json.dumps({"Database": {"Path": "t.db"}, "Qdrant": {"Path": ":memory:"}}))
    exporter = InMemorySpanExporter()
    async with open_app(load_settings(path, env={}), span_exporter=exporter) as app:
        assert app.tracing.enabled is False and app.settings.tracing.enabled is False
        assert not any(isinstance(f, TraceFilter) for _, f in app.kernel.function_invocation_filters)
        await read(app)
        await app.approvals.approve(await propose(app), supervisor("bob"))
    assert exporter.get_finished_spans() == ()
    assert build_tracing(TracingSettings()).provider is None


async def test_a_traced_app_never_sets_the_global_tracer_provider(tmp_path: Path) -> None:
    before = trace.get_tracer_provider()
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path), span_exporter=exporter) as app:
        await read(app)
        assert trace.get_tracer_provider() is before
    assert isinstance(before, trace.ProxyTracerProvider)
    assert [s.name for s in exporter.get_finished_spans()] == ["execute_tool assets-get_pump_details"]


async def test_an_approval_is_a_span_with_its_id_requester_approver_args_hash_and_decision_over_the_write(
    tmp_path: Path,
) -> None:
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path, **GUARDED), span_exporter=exporter) as app:
        approval_id = await propose(app)
        await app.approvals.approve(approval_id, supervisor("bob"))
        rows = {row.id: row for row in await app.audit.tail(10)}
    spans = exporter.get_finished_spans()
    [approval] = named(spans, "pumpops.approval")
    assert approval.attributes is not None and parent_of(approval) is None
    assert dict(approval.attributes) == {
        "pumpops.approval.id": approval_id,
        "pumpops.approval.requester": "alice",
        "pumpops.approval.approver": "bob",
        "pumpops.approval.function": "work_orders-create_work_order",
        "pumpops.approval.args_hash": args_hash("work_orders-create_work_order", ORDER),
        "pumpops.approval.decision": "approved",
    }
    proposal, execution = named(spans, "execute_tool work_orders-create_work_order")
    assert parent_of(proposal) is None and parent_of(execution) == span_id(approval)
    assert proposal.attributes is not None and proposal.attributes["pumpops.tool.outcome"] == "pending_approval"
    assert execution.attributes is not None and execution.attributes["pumpops.tool.outcome"] == "ok"
    row = rows[int(str(execution.attributes["pumpops.audit.id"]))]  # the row the write's own transaction appended
    assert (row.function, row.row_hash) == ("work_orders-create_work_order", execution.attributes["pumpops.audit.hash"])
    assert row.detail is not None and approval_id in row.detail
    assert "Inspect DE bearing" not in all_attribute_text(spans)


async def test_a_rejection_and_a_refused_self_approval_are_approval_spans_with_their_decision(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path, **GUARDED), span_exporter=exporter) as app:
        approval_id = await propose(app)
        with pytest.raises(ApprovalError, match="alice"):  # self-approval is refused
            await app.approvals.approve(approval_id, supervisor("alice"))
        await app.approvals.reject(approval_id, supervisor("bob"), "not needed")
    refused, rejected = named(exporter.get_finished_spans(), "pumpops.approval")
    assert refused.attributes is not None and rejected.attributes is not None
    assert (refused.attributes["pumpops.approval.decision"], refused.attributes["error.type"]) == (
        "refused",
        "SelfApprovalError",
    )
    assert refused.attributes["pumpops.approval.approver"] == "alice"
    assert (rejected.attributes["pumpops.approval.decision"], rejected.attributes["pumpops.approval.approver"]) == (
        "rejected",
        "bob",
    )


async def test_with_include_content_the_approval_span_carries_the_parked_arguments(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    async with open_app(traced_settings(tmp_path, include_content=True, **GUARDED), span_exporter=exporter) as app:
        await app.approvals.approve(await propose(app), supervisor("bob"))
    [approval] = named(exporter.get_finished_spans(), "pumpops.approval")
    assert approval.attributes is not None
    assert json.loads(str(approval.attributes["pumpops.approval.arguments"])) == ORDER


def test_the_console_exporter_and_an_otlp_endpoint_build_a_provider_that_is_not_global() -> None:
    before = trace.get_tracer_provider()
    for settings in (
        TracingSettings(enabled=True, exporter=TracingExporter.CONSOLE),
        TracingSettings(enabled=True, endpoint="http://127.0.0.1:4318"),
    ):
        tracing = build_tracing(settings)
        assert tracing.enabled and tracing.provider is not None
        tracing.shutdown()
    assert trace.get_tracer_provider() is before


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector on 127.0.0.1 that keeps what it receives."""

    received: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def test_the_otlp_exporter_sends_the_spans_to_the_configured_endpoint_when_the_app_closes() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        tracing = build_tracing(TracingSettings(enabled=True, endpoint=endpoint, service_name="pumps-test"))
        with tracing.span("execute_tool assets-get_pump_details", {"pumpops.audit.id": 7}):
            pass
        tracing.shutdown()  # flushes the batch
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    [(path, content_type, body)] = _Collector.received
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    request = ExportTraceServiceRequest.FromString(body)
    [resource_spans] = request.resource_spans
    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}["service.name"]
    [span] = [s for scope in resource_spans.scope_spans for s in scope.spans]
    assert (service, span.name) == ("pumps-test", "execute_tool assets-get_pump_details")
