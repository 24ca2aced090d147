"""The shared source pieces: the backoff between reconnects, and building the configured sources."""

from __future__ import annotations

import random

from kernel_setup.plant_settings import MqttSourceSettings, OpcUaSourceSettings, TelemetrySettings
from telemetry.sources import Backoff, MqttSource, OpcUaSource, build_sources


def test_backoff_doubles_with_jitter_within_its_bounds_and_resets() -> None:
    backoff = Backoff(0.5, 4.0, rng=random.Random(3))
    delays = [backoff.next_delay() for _ in range(8)]
    assert all(0.5 <= d <= 4.0 for d in delays)
    assert delays[0] == 0.5  # the first step is the minimum itself
    assert max(delays[4:]) > 2.0  # later steps reach toward the maximum
    backoff.reset()
    assert backoff.next_delay() == 0.5


def test_build_sources_makes_one_source_per_configured_server_with_its_name_and_kind() -> None:
    telemetry = TelemetrySettings(
        reconnect_min_seconds=0.1,
        mqtt=(MqttSourceSettings(name="broker", topic="a/{pump}/{sensor}"),),
        opc_ua=(OpcUaSourceSettings(name="plc", endpoint="opc.tcp://127.0.0.1:4840"),),
    )
    sources = build_sources(telemetry)
    expected = [(MqttSource, "broker", "mqtt"), (OpcUaSource, "plc", "opcua")]
    assert [(type(s), s.name, s.kind) for s in sources] == expected
    assert build_sources(TelemetrySettings()) == []
