"""Live values for a plant in the database, for `pumpops simulate`: over MQTT, or served by an OPC UA server.

Every sensor reads close to its normal value (inside its alarm threshold, with a little noise), except the drift
pump's vibration, which rises steadily from normal to 30 % beyond its threshold over ``drift_seconds`` and stays
there. The sensors, thresholds and normal values come from the database, so this works for the sample fleet and for
an imported plant alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

import aiomqtt
from asyncua import Server, ua

from kernel_setup.plant_settings import OpcUaNode
from storage import Database
from telemetry.sources.mqtt_payload import payload
from twin.models import BadDirection, SensorType

OVERSHOOT = 1.3
NOISE = 0.02


@dataclass(frozen=True)
class SimulatedSensor:
    """One pump sensor the simulator drives: its alarm threshold, which way is bad, and its normal value."""

    pump_id: str
    sensor_type: SensorType
    threshold: float
    bad_direction: BadDirection
    normal: float

    def value(self, *, drifting: bool, elapsed: float, drift_seconds: float, rng: random.Random) -> float:
        """The value ``elapsed`` seconds into a run: normal with noise, or on its way past the threshold."""
        target = self.threshold * (OVERSHOOT if self.bad_direction is BadDirection.HIGH else 1 / OVERSHOOT)
        share = min(1.0, elapsed / drift_seconds) if drifting else 0.0
        base = self.normal + (target - self.normal) * share
        return round(base * (1 + rng.uniform(-NOISE, NOISE)), 3)


async def plant_sensors(db: Database, pumps: Sequence[str] = ()) -> list[SimulatedSensor]:
    """The sensors of ``pumps`` (all pumps when empty), each with a normal value well inside its threshold."""
    rows = await db.fetch_all(
        "SELECT pump_id, sensor_type, bad_direction, alarm_threshold, latest_value FROM sensors "
        "ORDER BY pump_id, sensor_type"
    )
    wanted = set(pumps)
    sensors = []
    for row in rows:
        if wanted and row["pump_id"] not in wanted:
            continue
        threshold, latest = float(row["alarm_threshold"]), row["latest_value"]
        direction = BadDirection(row["bad_direction"])
        # Normal: the last value the registry holds when it is inside the threshold, else 70 % of the way to it.
        inside = latest is not None and (latest < threshold if direction is BadDirection.HIGH else latest > threshold)
        normal = float(latest) if inside else threshold * (0.7 if direction is BadDirection.HIGH else 1.3)
        sensors.append(SimulatedSensor(row["pump_id"], SensorType(row["sensor_type"]), threshold, direction, normal))
    return sensors


class _Clock:
    def __init__(self, drift_pump: str | None, drift_seconds: float, seed: int | None) -> None:
        self.drift_pump = drift_pump
        self.drift_seconds = drift_seconds
        self.rng = random.Random(seed)
        self.started = asyncio.get_running_loop().time()

    def value(self, sensor: SimulatedSensor) -> float:
        drifting = sensor.pump_id == self.drift_pump and sensor.sensor_type is SensorType.VIBRATION
        elapsed = asyncio.get_running_loop().time() - self.started
        return sensor.value(drifting=drifting, elapsed=elapsed, drift_seconds=self.drift_seconds, rng=self.rng)


async def _tick(stop: asyncio.Event, rate_hz: float) -> bool:
    """Wait one period; False once ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), 1 / rate_hz)
    return not stop.is_set()


async def simulate_mqtt(
    host: str,
    port: int,
    topic_prefix: str,
    sensors: Sequence[SimulatedSensor],
    *,
    rate_hz: float,
    drift_pump: str | None,
    stop: asyncio.Event,
    drift_seconds: float = 60.0,
    seed: int | None = None,
) -> int:
    """Publish every sensor's value ``rate_hz`` times a second on ``<topic_prefix>/<pump>/<sensor>`` until ``stop``.

    Payloads have the shape the MQTT source reads (`telemetry.sources.mqtt_payload`); QoS 1. A source reads them
    with the topic pattern ``<topic_prefix>/{pump}/{sensor}``. Returns the number of messages published.
    """
    clock = _Clock(drift_pump, drift_seconds, seed)
    published = 0
    async with aiomqtt.Client(host, port, identifier="pumpops-simulator") as client:
        while True:
            now = datetime.now(UTC)
            for sensor in sensors:
                topic = f"{topic_prefix}/{sensor.pump_id}/{sensor.sensor_type.value}"
                await client.publish(topic, payload(clock.value(sensor), now, sensor.sensor_type), qos=1)
                published += 1
            if not await _tick(stop, rate_hz):
                return published


async def serve_opcua(
    endpoint: str,
    sensors: Sequence[SimulatedSensor],
    *,
    rate_hz: float,
    drift_pump: str | None,
    stop: asyncio.Event,
    drift_seconds: float = 60.0,
    seed: int | None = None,
    on_ready: Callable[[tuple[OpcUaNode, ...]], None] | None = None,
) -> tuple[OpcUaNode, ...]:
    """Serve every sensor as an OPC UA variable (``ns=2;s=<pump>.<sensor>``) at ``endpoint`` until ``stop``.

    Values change ``rate_hz`` times a second, stamped with their source timestamp. ``on_ready`` receives the node
    map (the `Telemetry.OpcUa[].Nodes` entries a source needs; `node_map_json` writes them) once the server
    listens. Returns the node map.
    """
    server = Server()
    await server.init()
    server.set_endpoint(endpoint)
    server.set_server_name("PumpOps plant simulator")
    namespace = await server.register_namespace("urn:pumpops:simulator")
    variables = []
    nodes = []
    for pump_id in dict.fromkeys(s.pump_id for s in sensors):
        folder = await server.nodes.objects.add_object(namespace, pump_id)
        for sensor in (s for s in sensors if s.pump_id == pump_id):
            node_id = f"ns={namespace};s={pump_id}.{sensor.sensor_type.value}"
            variable = await folder.add_variable(node_id, f"{pump_id}.{sensor.sensor_type.value}", sensor.normal)
            variables.append((sensor, variable))
            nodes.append(OpcUaNode(pump=pump_id, sensor=sensor.sensor_type.value, node_id=node_id))
    node_map = tuple(nodes)
    clock = _Clock(drift_pump, drift_seconds, seed)
    async with server:
        if on_ready is not None:
            on_ready(node_map)
        while True:
            now = cast("ua.DateTime", datetime.now(UTC))  # asyncua's DateTime is a datetime
            for sensor, variable in variables:
                value = ua.Variant(clock.value(sensor), ua.VariantType.Double)
                await variable.write_value(ua.DataValue(value, SourceTimestamp=now, ServerTimestamp=now))
            if not await _tick(stop, rate_hz):
                return node_map


def node_map_json(nodes: Sequence[OpcUaNode]) -> str:
    """The node map as the ``Nodes`` list of an appsettings.json OPC UA source."""
    return json.dumps([{"Pump": n.pump, "Sensor": n.sensor, "NodeId": n.node_id} for n in nodes], indent=2)
