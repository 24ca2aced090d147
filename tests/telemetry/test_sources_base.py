"""The shared source pieces: the backoff between reconnects, and building the configured sources."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from asyncua import ua

from kernel_setup import load_settings
from kernel_setup.errors import SettingsError
from kernel_setup.plant_settings import MqttSourceSettings, OpcUaNode, OpcUaSourceSettings, TelemetrySettings
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


GOOD_NODE_IDS = ["ns=2;s=Station1.P1.Vibration", "ns=2;i=1001", "i=2258", "nsu=urn:plant:station1;s=P1 Flow",
                 "ns=3;g=09087e75-8e5e-499b-954f-f2a9603db28a", "ns=1;b=M/RbKBsRVkePCePcx24oRA=="]  # fmt: skip


@pytest.mark.parametrize("node_id", GOOD_NODE_IDS)
def test_a_node_id_in_opc_ua_string_form_is_taken_and_asyncua_reads_it_the_same(node_id: str) -> None:
    node = OpcUaNode(pump="PUMP-001", sensor="flow", node_id=node_id)
    assert ua.NodeId.from_string(node.node_id).to_string() == ua.NodeId.from_string(node_id).to_string()


@pytest.mark.parametrize("node_id", ["garbage", "ns=2;x=foo", "ns=abc;i=1", "ns=2;i=ten", "ns=2;g=not-a-guid", "s="])
def test_a_node_id_that_is_not_one_is_a_settings_error_naming_it_and_the_valid_forms(
    tmp_path: Path, node_id: str
) -> None:
    source = {"Name": "plc", "Endpoint": "opc.tcp://127.0.0.1:4840", "Nodes": [
        {"Pump": "PUMP-001", "Sensor": "flow", "NodeId": "ns=2;s=P1.Flow"},
        {"Pump": "PUMP-001", "Sensor": "vibration", "NodeId": node_id},
    ]}  # fmt: skip
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Telemetry": {"OpcUa": [source]}}))
    with pytest.raises(SettingsError) as raised:
        load_settings(settings, env={})
    message = str(raised.value)
    assert "Telemetry.OpcUa" in message and repr(node_id) in message and "ns=2;s=Station1.P1.Vibration" in message
