"""The `Tracing` settings section: OpenTelemetry spans of turns, model and tool calls and approvals (off by default)."""

from __future__ import annotations

from enum import Enum

from pydantic import ConfigDict, Field, field_validator

from kernel_setup.settings_sections import Section, alias


class TracingExporter(str, Enum):
    """Where finished spans go: an OTLP collector or stdout."""

    OTLP = "otlp"
    CONSOLE = "console"


class TracingSettings(Section):
    """OpenTelemetry tracing (`kernel_setup.tracing`, docs/tracing.md).

    With ``Enabled: false`` no tracer provider is built and no span is started. ``Endpoint`` unset, the OTLP
    exporter reads the standard ``OTEL_EXPORTER_OTLP_*`` environment variables.
    """

    model_config = ConfigDict(alias_generator=alias)
    enabled: bool = False
    exporter: TracingExporter = TracingExporter.OTLP
    endpoint: str | None = None
    """The collector, e.g. ``http://127.0.0.1:4318`` (OTLP/HTTP; ``/v1/traces`` is added) or ``http://127.0.0.1:4317``
    with ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc``."""
    include_content: bool = False
    """Put tool arguments and results, the question and the answer on spans; they may hold plant data."""
    service_name: str = Field(default="pumpops", min_length=1, max_length=200)

    @field_validator("endpoint")
    @classmethod
    def _endpoint_is_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL, e.g. 'http://127.0.0.1:4318'")
        return value
