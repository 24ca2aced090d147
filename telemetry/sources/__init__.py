"""The plant's live sources, each read-only: values come in, nothing goes out to the plant."""

from __future__ import annotations

from kernel_setup.plant_settings import TelemetrySettings
from telemetry.sources.base import (
    Backoff,
    ReadingSink,
    Source,
    SourceState,
    SourceStatus,
    StatusSink,
)
from telemetry.sources.mqtt import MqttSource
from telemetry.sources.opcua import OpcUaSource

__all__ = [
    "Backoff",
    "MqttSource",
    "OpcUaSource",
    "ReadingSink",
    "Source",
    "SourceState",
    "SourceStatus",
    "StatusSink",
    "build_sources",
]


def build_sources(telemetry: TelemetrySettings) -> list[Source]:
    """One source per configured MQTT broker and OPC UA server, MQTT first, in the settings' order."""
    bounds = {
        "reconnect_min": telemetry.reconnect_min_seconds,
        "reconnect_max": max(telemetry.reconnect_min_seconds, telemetry.reconnect_max_seconds),
    }
    sources: list[Source] = [MqttSource(s, **bounds) for s in telemetry.mqtt]
    sources.extend(OpcUaSource(s, **bounds) for s in telemetry.opc_ua)
    return sources
