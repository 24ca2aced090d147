"""The OPC UA source against a real asyncua server on 127.0.0.1: values, bad values, outages, reconnects, and
the proof that it only reads (every service request the server receives is recorded)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from asyncua import Client, ua

from kernel_setup.plant_settings import OpcUaNode, OpcUaSourceSettings
from telemetry.sources.base import SourceState
from telemetry.sources.opcua import OpcUaSource
from tests.telemetry.conftest import Collected, stop_source
from tests.telemetry.plant_servers import OpcUaPlant, free_port, recorded_requests
from twin.models import SensorType

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
NAMES = ["P1.Vibration", "P1.Flow"]
# One server for the module (building its address space takes seconds); each test runs its own source against it.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def plant() -> AsyncIterator[OpcUaPlant]:
    server = OpcUaPlant(free_port(), NAMES)
    await server.start()
    yield server
    await server.stop()


def _source(plant: OpcUaPlant, node_ids: dict[str, str] | None = None) -> OpcUaSource:
    ids = node_ids or {name: plant.variables[name].node_id for name in NAMES}
    settings = OpcUaSourceSettings(
        name="station1-plc",
        endpoint=plant.endpoint,
        sampling_interval_ms=10,
        nodes=(
            OpcUaNode(pump="pump 1", sensor="vibration", node_id=ids["P1.Vibration"]),
            OpcUaNode(pump="PUMP-001", sensor="flow", node_id=ids["P1.Flow"]),
        ),
    )
    return OpcUaSource(settings, reconnect_min=0.05, reconnect_max=0.2)


def _values(got: Collected) -> list[float]:
    return [r.value for r in got.readings]


async def test_values_arrive_with_pump_sensor_value_and_the_source_timestamp(plant: OpcUaPlant) -> None:
    source, got = _source(plant), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    await got.until(lambda: len(got.readings) >= 2, "the initial values")
    await plant.set("P1.Vibration", 4.5, T0)
    await got.until(lambda: 4.5 in _values(got), "the new vibration value")
    await plant.set("P1.Flow", 118.0, T0 + timedelta(seconds=1))
    await got.until(lambda: 118.0 in _values(got), "the new flow value")
    await stop_source(task)

    vibration = next(r for r in got.readings if r.value == 4.5)
    flow = next(r for r in got.readings if r.value == 118.0)
    assert (vibration.pump_id, vibration.sensor_type, vibration.at) == ("PUMP-001", SensorType.VIBRATION, T0)
    assert (flow.pump_id, flow.sensor_type, flow.at) == ("PUMP-001", SensorType.FLOW, T0 + timedelta(seconds=1))
    assert vibration.source == "station1-plc"
    assert got.states[-1] is SourceState.STOPPED


async def test_bad_status_values_are_counted_as_malformed_and_skipped(plant: OpcUaPlant) -> None:
    source, got = _source(plant), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    await got.until(lambda: len(got.readings) >= 2, "the initial values")
    await plant.set("P1.Vibration", 9.9, T0, bad=True)
    await plant.set("P1.Vibration", 3.3, T0 + timedelta(seconds=2))
    await got.until(lambda: 3.3 in _values(got), "the good value after the bad one")
    await stop_source(task)

    assert 9.9 not in _values(got)
    assert source.status().malformed == 1


async def test_out_of_order_source_timestamps_are_passed_on_unchanged(plant: OpcUaPlant) -> None:
    source, got = _source(plant), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    await got.until(lambda: len(got.readings) >= 2, "the initial values")
    await plant.set("P1.Vibration", 5.0, T0 + timedelta(seconds=10))
    await got.until(lambda: 5.0 in _values(got), "the first value")
    await plant.set("P1.Vibration", 6.0, T0)
    await got.until(lambda: 6.0 in _values(got), "the older value")
    await stop_source(task)

    assert [r.at for r in got.readings if r.value in (5.0, 6.0)] == [T0 + timedelta(seconds=10), T0]


async def test_a_server_down_at_start_is_retried_until_it_comes_up(plant: OpcUaPlant) -> None:
    await plant.stop()
    source, got = _source(plant), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    try:
        await got.until(lambda: got.states.count(SourceState.FAILED) >= 2, "two failed attempts")
        assert got.statuses[-1].detail  # a failed status says why
    finally:
        await plant.start()
    await got.connected()
    await plant.set("P1.Vibration", 2.2, T0)
    await got.until(lambda: 2.2 in _values(got), "a value")
    await stop_source(task)


async def test_after_the_server_restarts_the_source_reconnects_and_values_arrive(plant: OpcUaPlant) -> None:
    source, got = _source(plant), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    await plant.set("P1.Vibration", 1.5, T0)
    await got.until(lambda: 1.5 in _values(got), "a value before the restart")

    await plant.stop()
    await got.until(lambda: got.states[-1] is SourceState.FAILED, "the loss reported as failed")
    await plant.start()
    await got.connected(times=2)
    await plant.set("P1.Vibration", 7.5, T0 + timedelta(seconds=5))
    await got.until(lambda: 7.5 in _values(got), "a value after the restart")
    await stop_source(task)


# The services that change a server: none may ever reach it from the source.
FORBIDDEN = {
    "WriteRequest",
    "CallRequest",
    "AddNodesRequest",
    "DeleteNodesRequest",
    "AddReferencesRequest",
    "DeleteReferencesRequest",
    "HistoryUpdateRequest",
}


async def test_the_request_recorder_sees_a_write_when_a_client_writes(
    plant: OpcUaPlant, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recorded_requests(monkeypatch) as requests:
        async with Client(plant.endpoint) as writer:
            node = writer.get_node(plant.variables["P1.Flow"].node_id)
            # The variable is read-only, so the server refuses the write; the request still reached it.
            with contextlib.suppress(ua.UaStatusCodeError):
                await node.write_value(ua.Variant(1.0, ua.VariantType.Double))
    assert "WriteRequest" in requests


async def test_a_source_session_sends_only_reading_requests(plant: OpcUaPlant, monkeypatch: pytest.MonkeyPatch) -> None:
    with recorded_requests(monkeypatch) as requests:
        source, got = _source(plant), Collected()
        task = asyncio.create_task(source.run(got.sink, got.on_status))
        await got.connected()
        await plant.set("P1.Vibration", 8.1, T0)
        await got.until(lambda: 8.1 in _values(got), "a value")
        await plant.stop()
        await got.until(lambda: got.states[-1] is SourceState.FAILED, "the loss")
        await plant.start()
        await got.connected(times=2)
        await plant.set("P1.Vibration", 8.2, T0 + timedelta(seconds=1))
        await got.until(lambda: 8.2 in _values(got), "a value after the restart")
        await stop_source(task)

    assert {"CreateSubscriptionRequest", "CreateMonitoredItemsRequest", "PublishRequest"} <= set(requests)
    assert requests.count("CreateSessionRequest") == 2
    assert FORBIDDEN.isdisjoint(requests), sorted(FORBIDDEN & set(requests))
