"""OpenTelemetry tracing after the GenAI semantic conventions: one `Tracing` per app, built by the composition root.

The span tree of a turn is ``invoke_agent`` → ``chat {model}`` (each model call) and ``execute_tool {name}`` (each
kernel invocation, with the audit row's id and hash); a supervisor's decision is a ``pumpops.approval`` span; an MCP
``tools/call`` continues the caller's trace from ``_meta.traceparent``. Names: docs/tracing.md.

Rules: no global tracer provider is ever set (Semantic Kernel's own spans use the global one, so they stay
non-recording and are never doubled with these); tracing off builds no provider and starts no span; argument,
result, question and answer text go on spans only with ``Tracing.IncludeContent``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from kernel_setup.tracing_settings import TracingExporter, TracingSettings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from governance.audit_log import AuditRow

# GenAI semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"
# MCP semantic conventions for the server side of a tools/call.
MCP_METHOD = "mcp.method.name"
MCP_SESSION_ID = "mcp.session.id"
JSONRPC_REQUEST_ID = "jsonrpc.request.id"
# PumpOps' own: no convention exists for these.
TOOL_OUTCOME = "pumpops.tool.outcome"
AUDIT_ID = "pumpops.audit.id"
AUDIT_HASH = "pumpops.audit.hash"
PRINCIPAL = "pumpops.principal"
DOOR = "pumpops.door"
APPROVAL_SPAN = "pumpops.approval"
APPROVAL_ID = "pumpops.approval.id"
APPROVAL_REQUESTER = "pumpops.approval.requester"
APPROVAL_APPROVER = "pumpops.approval.approver"
APPROVAL_ARGS_HASH = "pumpops.approval.args_hash"
APPROVAL_DECISION = "pumpops.approval.decision"
APPROVAL_FUNCTION = "pumpops.approval.function"
APPROVAL_ARGUMENTS = "pumpops.approval.arguments"

AGENT = "pumpops"
MAX_CONTENT_CHARS = 8_000
"""Longer argument, result or message text is cut on the span (with IncludeContent)."""

_OFF: AbstractContextManager[None] = nullcontext()
_TOOL_SPAN: ContextVar[Span | None] = ContextVar("pumpops_tool_span", default=None)
_TOOL_CALL_ID: ContextVar[str | None] = ContextVar("pumpops_tool_call_id", default=None)


class Tracing:
    """The app's tracer, or none: every span helper here does nothing when tracing is off.

    Build it with `build_tracing` (the composition root does); `Tracing.off()` is the disabled one.
    """

    def __init__(
        self, tracer: Tracer | None = None, *, include_content: bool = False, provider: TracerProvider | None = None
    ) -> None:
        self._tracer = tracer
        self._provider = provider
        self.include_content = include_content

    @classmethod
    def off(cls) -> Tracing:
        """Tracing switched off: no provider, no spans."""
        return cls()

    @property
    def enabled(self) -> bool:
        """Whether spans are made."""
        return self._tracer is not None

    @property
    def provider(self) -> TracerProvider | None:
        """The private tracer provider this app built, or None when tracing is off (or the tracer came from outside)."""
        return self._provider

    def span(
        self,
        name: str,
        attributes: Mapping[str, Any] | None = None,
        *,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        current: bool = True,
    ) -> AbstractContextManager[Span | None]:
        """A span around the block (the current one inside it unless ``current`` is false); None when off.

        An exception ending the block marks the span as an error with ``error.type`` (its class name) only: its
        message may quote arguments, and goes on the span only with IncludeContent.
        """
        if self._tracer is None:
            return _OFF  # tracing off: no span, no generator, no context change
        return self._started(self._tracer, name, attributes, context, kind, current)

    @contextmanager
    def _started(
        self,
        tracer: Tracer,
        name: str,
        attributes: Mapping[str, Any] | None,
        context: Context | None,
        kind: SpanKind,
        current: bool,
    ) -> Iterator[Span | None]:
        span = tracer.start_span(name, context=context, kind=kind, attributes=dict(attributes or {}))
        try:
            if current:
                with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                    yield span
            else:
                yield span
        except GeneratorExit:
            raise  # a turn's event stream closed early: not a failure
        except BaseException as exc:
            mark_error(span, exc, include_message=self.include_content)
            raise
        finally:
            span.end()

    @contextmanager
    def tool_span(self, name: str, attributes: Mapping[str, Any]) -> Iterator[Span | None]:
        """An ``execute_tool`` span that `note_audit_row` annotates with the invocation's audit row."""
        with self.span(name, attributes) as span:
            token = _TOOL_SPAN.set(span)
            try:
                yield span
            finally:
                _TOOL_SPAN.reset(token)

    def content(self, value: Any) -> str:
        """``value`` as span text: JSON when it serialises, cut at `MAX_CONTENT_CHARS`."""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + "…"

    def shutdown(self) -> None:
        """Flush and stop the exporter (the app's close does this)."""
        if self._provider is not None:
            self._provider.shutdown()


def mark_error(span: Span, exc: BaseException, *, include_message: bool) -> None:
    """Mark ``span`` failed by ``exc``: ``error.type`` always, the message only when content may be shown."""
    span.set_attribute(ERROR_TYPE, type(exc).__name__)
    span.set_status(Status(StatusCode.ERROR, str(exc) if include_message else None))


def build_tracing(settings: TracingSettings, exporter: SpanExporter | None = None) -> Tracing:
    """The app's tracing: off unless ``Tracing.Enabled``; then a private provider and the configured exporter.

    ``exporter`` replaces the configured one (tests and the bench pass an in-memory exporter) and is exported to
    span by span. The provider is never made the global one.
    """
    if not settings.enabled:
        return Tracing.off()
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.service_name}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif settings.exporter is TracingExporter.CONSOLE:
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        # stderr: stdout carries MCP's stdio protocol and the CLI's --json output.
        console = ConsoleSpanExporter(service_name=settings.service_name, out=sys.stderr)
        provider.add_span_processor(SimpleSpanProcessor(console))
    else:
        provider.add_span_processor(BatchSpanProcessor(_otlp_exporter(settings.endpoint)))
    tracer = provider.get_tracer("pumpops")
    return Tracing(tracer, include_content=settings.include_content, provider=provider)


def _otlp_exporter(endpoint: str | None) -> SpanExporter:
    """OTLP over HTTP (default) or gRPC, as ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL`` says."""
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if (protocol or "http/protobuf").strip().lower() == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    if endpoint is not None and not endpoint.rstrip("/").endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"  # as the exporter does for OTEL_EXPORTER_OTLP_ENDPOINT
    return HttpExporter(endpoint=endpoint)


def note_audit_row(row: AuditRow) -> None:
    """Put the audit row of the invocation in progress on its ``execute_tool`` span (nothing when untraced)."""
    span = _TOOL_SPAN.get()
    if span is not None:
        span.set_attribute(AUDIT_ID, row.id)
        span.set_attribute(AUDIT_HASH, row.row_hash)


class calling:
    """The model's id of the tool call run inside this block (``gen_ai.tool.call.id`` of its span).

    A class, not a generator: it runs on every tool call of a turn, traced or not.
    """

    def __init__(self, call_id: str | None) -> None:
        self._call_id = call_id
        self._token: Token[str | None] | None = None

    def __enter__(self) -> None:
        self._token = _TOOL_CALL_ID.set(self._call_id)

    def __exit__(self, *_: object) -> None:
        if self._token is not None:
            _TOOL_CALL_ID.reset(self._token)


def current_tool_call_id() -> str | None:
    """The model's id of the tool call in progress, when a turn runs it."""
    return _TOOL_CALL_ID.get()


def continued(meta: Mapping[str, Any] | None) -> Context | None:
    """The caller's trace context from a W3C ``traceparent`` (and ``tracestate``) in an MCP request's ``_meta``."""
    if not meta or not isinstance(meta.get("traceparent"), str):
        return None
    carrier = {key: meta[key] for key in ("traceparent", "tracestate") if isinstance(meta.get(key), str)}
    return TraceContextTextMapPropagator().extract(carrier)
