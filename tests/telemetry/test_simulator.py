"""The simulator: the plant's sensors from the database, values inside thresholds, one drifting pump, and the
sources reading what it publishes and serves."""

from __future__ import annotations

import asyncio
import random

from kernel_setup.plant_settings import MqttSourceSettings, OpcUaNode, OpcUaSourceSettings
from storage import Database
from telemetry.simulator import node_map_json, plant_sensors, serve_opcua, simulate_mqtt
from telemetry.sources.mqtt import MqttSource
from telemetry.sources.opcua import OpcUaSource
from tests.telemetry.conftest import Collected
from tests.telemetry.plant_servers import MqttBroker, free_port
from twin.models import BadDirection, SensorType


def _inside(value: float, threshold: float, direction: BadDirection) -> bool:
    return value < threshold if direction is BadDirection.HIGH else value > threshold


async def test_every_sensor_of_the_plant_starts_inside_its_threshold(db: Database) -> None:
    sensors = await plant_sensors(db)
    rng = random.Random(1)
    assert len({s.pump_id for s in sensors}) == 8
    assert len(sensors) == 8 * len(SensorType)
    for sensor in sensors:
        value = sensor.value(drifting=False, elapsed=1000.0, drift_seconds=60.0, rng=rng)
        assert _inside(value, sensor.threshold, sensor.bad_direction), sensor


async def test_the_drifting_vibration_rises_past_its_threshold_within_the_drift_time(db: Database) -> None:
    (vibration,) = [s for s in await plant_sensors(db, ["PUMP-003"]) if s.sensor_type is SensorType.VIBRATION]
    rng = random.Random(2)
    values = [vibration.value(drifting=True, elapsed=t, drift_seconds=60.0, rng=rng) for t in (0, 30, 60, 90)]
    assert values[0] < vibration.threshold < values[2]
    assert values[0] < values[1] < values[2]
    assert values[3] > vibration.threshold


async def test_the_mqtt_source_reads_what_the_simulator_publishes(db: Database) -> None:
    sensors = await plant_sensors(db, ["PUMP-001", "PUMP-002"])
    broker = MqttBroker(free_port())
    await broker.start()
    source = MqttSource(
        MqttSourceSettings(name="sim", port=broker.port, topic="sim/{pump}/{sensor}"),
        reconnect_min=0.05,
        reconnect_max=0.2,
    )
    got, stop = Collected(), asyncio.Event()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    try:
        await got.connected()
        publisher = asyncio.create_task(
            simulate_mqtt(
                "127.0.0.1",
                broker.port,
                "sim",
                sensors,
                rate_hz=50,
                drift_pump="PUMP-002",
                stop=stop,
                drift_seconds=0.05,
            )
        )
        drifted = next(s for s in sensors if s.pump_id == "PUMP-002" and s.sensor_type is SensorType.VIBRATION)
        await got.until(
            lambda: any(r.pump_id == "PUMP-002" and r.value > drifted.threshold for r in got.readings),
            "PUMP-002's vibration beyond its threshold",
        )
        stop.set()
        assert await publisher > 0
        task.cancel()
        await task
    finally:
        await broker.stop()
    assert source.status().malformed == 0
    assert {(r.pump_id, r.sensor_type) for r in got.readings} == {(s.pump_id, s.sensor_type) for s in sensors}


async def test_the_opcua_source_reads_what_the_simulator_serves(db: Database) -> None:
    sensors = await plant_sensors(db, ["PUMP-004"])
    endpoint = f"opc.tcp://127.0.0.1:{free_port()}/sim/"
    ready: asyncio.Future[tuple[OpcUaNode, ...]] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    server = asyncio.create_task(
        serve_opcua(
            endpoint,
            sensors,
            rate_hz=50,
            drift_pump="PUMP-004",
            stop=stop,
            drift_seconds=0.05,
            on_ready=ready.set_result,
        )
    )
    nodes = await asyncio.wait_for(ready, 10)
    assert '"NodeId": "ns=2;s=PUMP-004.vibration"' in node_map_json(nodes)
    source = OpcUaSource(
        OpcUaSourceSettings(name="sim-plc", endpoint=endpoint, sampling_interval_ms=10, nodes=nodes),
        reconnect_min=0.05,
        reconnect_max=0.2,
    )
    got = Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    drifted = next(s for s in sensors if s.sensor_type is SensorType.VIBRATION)
    try:
        await got.until(
            lambda: any(r.sensor_type is SensorType.VIBRATION and r.value > drifted.threshold for r in got.readings),
            "the vibration beyond its threshold",
        )
        task.cancel()
        await task
    finally:
        stop.set()
        assert await server == nodes
    assert {r.sensor_type for r in got.readings} == set(SensorType)
