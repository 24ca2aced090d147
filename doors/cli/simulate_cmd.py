"""`pumpops simulate`: the plant in the database, live, over OPC UA or MQTT, with one pump drifting into alarm.

For a newcomer to watch `pumpops telemetry` raise and triage an alarm without a plant: the simulator serves (OPC
UA) or publishes (MQTT) every sensor's value near normal, except the drift pump's vibration, which rises past its
alarm threshold. It prints the exact command that points `pumpops telemetry` at it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import aiomqtt
import typer
from amqtt.broker import Broker

from doors.cli.common import CliState, fail, run, state
from doors.cli.safe_text import safe_text
from kernel_setup.plant_settings import OpcUaNode
from storage import open_database
from telemetry.simulator import SimulatedSensor, plant_sensors, serve_opcua, simulate_mqtt
from twin.identifiers import normalize_pump_id
from twin.models import SensorType

app = typer.Typer(help="Simulate the plant in the database, live, with one pump drifting into alarm (no plant needed).")

_RATE = typer.Option(
    1.0, "--rate", min=0.01, max=100.0, help="Values per sensor per second (the registry keeps one a second)."
)
_DRIFT = typer.Option(
    None, "--drift", help="The pump whose vibration rises past its threshold (default: the last pump with one)."
)
_DRIFT_SECONDS = typer.Option(
    60.0, "--drift-seconds", min=1.0, help="Seconds the drift takes to reach 1.3 times the threshold."
)


@app.command("opcua")
def opcua_command(
    ctx: typer.Context,
    endpoint: str = typer.Option("opc.tcp://127.0.0.1:4840/pumpops/", "--endpoint", help="Where the server listens."),
    rate: float = _RATE,
    drift: str | None = _DRIFT,
    drift_seconds: float = _DRIFT_SECONDS,
) -> None:
    """Serve every sensor as an OPC UA variable (ns=2;s=PUMP.sensor) until Ctrl-C.

    Example: pumpops simulate opcua --drift PUMP-103
    """
    cli = state(ctx)
    if not endpoint.startswith("opc.tcp://"):
        fail(cli, f"--endpoint must be an opc.tcp:// URL, e.g. opc.tcp://127.0.0.1:4840/pumpops/, not {endpoint!r}")
    sensors, drift_pump = run(cli, _sensors(cli, drift))

    def ready(nodes: tuple[OpcUaNode, ...]) -> None:
        source = {
            "Name": "simulator",
            "Endpoint": endpoint,
            "Nodes": [{"Pump": n.pump, "Sensor": n.sensor, "NodeId": n.node_id} for n in nodes],
        }
        _announce(cli, f"serving {len(nodes)} values at {endpoint}", "OpcUa", source, drift_pump, drift_seconds)

    async def serve(stop: asyncio.Event) -> None:
        await serve_opcua(
            endpoint,
            sensors,
            rate_hz=rate,
            drift_pump=drift_pump,
            stop=stop,
            drift_seconds=drift_seconds,
            on_ready=ready,
        )

    run(cli, _until_stopped(cli, serve))


@app.command("mqtt")
def mqtt_command(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="The MQTT broker."),
    port: int = typer.Option(1883, "--port", min=1, max=65535, help="The broker's port."),
    prefix: str = typer.Option("example/plant", "--prefix", help="Topics are PREFIX/PUMP/SENSOR."),
    broker: bool = typer.Option(False, "--broker", help="Run a broker in this process on HOST:PORT (amqtt)."),
    rate: float = _RATE,
    drift: str | None = _DRIFT,
    drift_seconds: float = _DRIFT_SECONDS,
) -> None:
    """Publish every sensor's value as JSON ({"value": …, "timestamp": …}, QoS 1) until Ctrl-C.

    Example: pumpops simulate mqtt --broker --drift PUMP-103
    """
    cli = state(ctx)
    if not prefix.strip("/") or any(c in prefix for c in "+#"):
        fail(cli, f"--prefix must be topic levels without wildcards, e.g. example/plant, not {prefix!r}")
    prefix = prefix.strip("/")
    sensors, drift_pump = run(cli, _sensors(cli, drift))
    source = {"Name": "simulator", "Host": host, "Port": port, "Topic": prefix + "/{pump}/{sensor}"}

    async def publish(stop: asyncio.Event) -> None:
        embedded = await _start_broker(cli, host, port) if broker else None
        try:
            _announce(cli, f"publishing {len(sensors)} values on {prefix}/…", "Mqtt", source, drift_pump, drift_seconds)
            await simulate_mqtt(
                host,
                port,
                prefix,
                sensors,
                rate_hz=rate,
                drift_pump=drift_pump,
                stop=stop,
                drift_seconds=drift_seconds,
            )
        except aiomqtt.MqttError as exc:
            fail(
                cli,
                f"cannot publish to the MQTT broker at {host}:{port} ({exc}); start a broker there, "
                "or add --broker to run one in this process",
            )
        finally:
            if embedded is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(embedded.shutdown(), timeout=5)

    run(cli, _until_stopped(cli, publish))


async def _sensors(cli: CliState, drift: str | None) -> tuple[list[SimulatedSensor], str | None]:
    db = await open_database(cli.settings().database_target)
    try:
        sensors = await plant_sensors(db)
    finally:
        await db.close()
    if not sensors:
        fail(cli, "the database has no sensors: run `pumpops db init` (the sample fleet) or `pumpops db import FOLDER`")
    vibrating = [s.pump_id for s in sensors if s.sensor_type is SensorType.VIBRATION]
    if drift is None:
        return sensors, vibrating[-1] if vibrating else None
    pump = normalize_pump_id(drift)
    if pump not in vibrating:
        known = ", ".join(dict.fromkeys(vibrating)) or "none"
        fail(cli, f"--drift {drift!r}: no pump with a vibration sensor has that id; pumps with one: {known}")
    return sensors, pump


def _announce(
    cli: CliState, what: str, section: str, source: dict[str, Any], drift_pump: str | None, drift_seconds: float
) -> None:
    cli.err_console.print(f"simulator {what}; Ctrl-C stops.", highlight=False)
    if drift_pump:
        cli.err_console.print(
            f"{safe_text(drift_pump)}'s vibration rises past its alarm threshold over {drift_seconds:.0f} s.",
            highlight=False,
        )
    cli.err_console.print("Point the telemetry service at it, in another terminal:", highlight=False)
    cli.console.out(f"PUMPOPS_Telemetry__{section}='{json.dumps([source])}' pumpops telemetry", highlight=False)


async def _start_broker(cli: CliState, host: str, port: int) -> Broker:
    config = {
        "listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}"}},
        "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
    }
    broker = Broker(config)
    try:
        await broker.start()
    except Exception as exc:  # amqtt wraps the bind failure in its own error types
        fail(cli, f"cannot run a broker on {host}:{port}: {exc}")
    cli.err_console.print(f"broker listening on {host}:{port}", highlight=False)
    return broker


async def _until_stopped(cli: CliState, work: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``work`` until it returns or Ctrl-C / SIGTERM sets its stop event."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(number, stop.set)
    try:
        await work(stop)
    except OSError as exc:
        fail(cli, f"the simulator could not start: {exc}")
    cli.err_console.print("simulator stopped", highlight=False)
