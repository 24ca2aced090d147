"""The MQTT source against a real amqtt broker on 127.0.0.1: values, malformed messages, outages, reconnects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import aiomqtt
import pytest
from pydantic import SecretStr

from kernel_setup.plant_settings import MqttSourceSettings
from telemetry.sources.base import SourceState
from telemetry.sources.mqtt import MqttSource
from telemetry.sources.mqtt_payload import payload
from tests.telemetry.conftest import Collected, stop_source
from tests.telemetry.plant_servers import Mosquitto, MqttBroker, TcpProxy, free_port
from twin.models import SensorType

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
PUBLISHER = "plant-publisher"


@pytest.fixture
async def broker() -> AsyncIterator[MqttBroker]:
    plant = MqttBroker(free_port())
    await plant.start()
    yield plant
    await plant.stop()


def _source(port: int) -> MqttSource:
    settings = MqttSourceSettings(name="station1", port=port, topic="acme/north/{pump}/{sensor}")
    return MqttSource(settings, reconnect_min=0.05, reconnect_max=0.2)


async def _publish(port: int, *messages: tuple[str, bytes]) -> None:
    async with aiomqtt.Client("127.0.0.1", port, identifier=PUBLISHER) as client:
        for topic, body in messages:
            await client.publish(topic, body, qos=1)


async def test_values_arrive_as_readings_with_pump_sensor_value_and_the_payload_time(broker: MqttBroker) -> None:
    source, got = _source(broker.port), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    berlin = timezone(timedelta(hours=1))
    await _publish(
        broker.port,
        ("acme/north/PUMP-007/vibration", payload(4.2, T0, SensorType.VIBRATION)),
        ("acme/north/pump-3/flow", b'{"value": 120, "timestamp": "2025-03-01T11:00:05+01:00", "unit": "m3/h"}'),
    )
    await got.until(lambda: len(got.readings) == 2, "two readings")
    await stop_source(task)

    first, second = got.readings
    assert (first.pump_id, first.sensor_type, first.value, first.at) == ("PUMP-007", SensorType.VIBRATION, 4.2, T0)
    assert (second.pump_id, second.sensor_type, second.value) == ("PUMP-003", SensorType.FLOW, 120.0)
    assert second.at == datetime(2025, 3, 1, 11, 0, 5, tzinfo=berlin)
    assert {r.source for r in got.readings} == {"station1"}
    assert got.states[-1] is SourceState.STOPPED
    assert source.status().received == 2


async def test_malformed_messages_are_counted_and_skipped(broker: MqttBroker) -> None:
    source, got = _source(broker.port), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    good = payload(1.0, T0)
    await _publish(
        broker.port,
        ("acme/north/PUMP-001/vibration", b"not json"),
        ("acme/north/PUMP-001/vibration", b"[1, 2]"),
        ("acme/north/PUMP-001/vibration", b'{"timestamp": "2025-03-01T10:00:00Z"}'),
        ("acme/north/PUMP-001/vibration", b'{"value": "high", "timestamp": "2025-03-01T10:00:00Z"}'),
        ("acme/north/PUMP-001/vibration", b'{"value": NaN, "timestamp": "2025-03-01T10:00:00Z"}'),
        ("acme/north/PUMP-001/vibration", b'{"value": 1.0, "timestamp": "2025-03-01T10:00:00"}'),
        ("acme/north/PUMP-001/vibration", b'{"value": 1.0, "timestamp": "2025-03-01T10:00:00Z", "unit": "bar"}'),
        ("acme/north/PUMP-001/humidity", good),
        ("acme/north/boiler/vibration", good),
        ("acme/north/PUMP-001/vibration", payload(2.0, T0)),
    )
    await got.until(lambda: len(got.readings) == 1, "the one good reading")
    await stop_source(task)

    assert [r.value for r in got.readings] == [2.0]
    assert source.status().malformed == 9
    assert source.status().received == 1


async def test_out_of_order_timestamps_are_passed_on_unchanged(broker: MqttBroker) -> None:
    source, got = _source(broker.port), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    times = [T0 + timedelta(seconds=s) for s in (10, 0, 5)]
    await _publish(broker.port, *(("acme/north/PUMP-002/flow", payload(float(i), at)) for i, at in enumerate(times)))
    await got.until(lambda: len(got.readings) == 3, "three readings")
    await stop_source(task)

    assert [r.at for r in got.readings] == times


async def test_a_broker_down_at_start_is_retried_until_it_comes_up() -> None:
    port = free_port()
    source, got = _source(port), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.until(lambda: got.states.count(SourceState.FAILED) >= 2, "two failed attempts")
    assert got.statuses[-1].detail  # a failed status says why

    broker = MqttBroker(port)
    await broker.start()
    try:
        await got.connected()
        await _publish(port, ("acme/north/PUMP-004/motor_current", payload(31.5, T0)))
        await got.until(lambda: len(got.readings) == 1, "a reading")
        await stop_source(task)
    finally:
        await broker.stop()
    assert got.readings[0].value == 31.5


async def test_after_a_dropped_connection_the_source_reconnects_and_values_arrive(broker: MqttBroker) -> None:
    network = TcpProxy(broker.port)
    await network.start()
    source, got = _source(network.port), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    try:
        await got.connected()
        await _publish(broker.port, ("acme/north/PUMP-005/vibration", payload(2.0, T0)))
        await got.until(lambda: len(got.readings) == 1, "a reading before the drop")

        await network.drop()
        await got.until(lambda: got.states[-1] is SourceState.FAILED, "the drop reported as failed")
        await network.start()
        await got.connected(times=2)
        await _publish(broker.port, ("acme/north/PUMP-005/vibration", payload(3.0, T0 + timedelta(seconds=1))))
        await got.until(lambda: len(got.readings) == 2, "a reading after the drop")
        await stop_source(task)
    finally:
        await network.drop()
    assert [r.value for r in got.readings] == [2.0, 3.0]


async def test_the_source_publishes_nothing_only_the_plant_does(broker: MqttBroker) -> None:
    source, got = _source(broker.port), Collected()
    task = asyncio.create_task(source.run(got.sink, got.on_status))
    await got.connected()
    await _publish(
        broker.port,
        ("acme/north/PUMP-006/vibration", payload(2.0, T0)),
        ("acme/north/PUMP-006/vibration", b"not json"),
    )
    await got.until(lambda: source.status().malformed == 1, "both messages handled")
    await stop_source(task)

    # The broker recorded every message any client published: all of them came from the plant's publisher.
    assert broker.published
    assert {client for client, _ in broker.published} == {PUBLISHER}


async def test_a_broker_that_wants_credentials_admits_the_configured_ones_and_a_wrong_password_is_reported() -> None:
    plant = MqttBroker(free_port(), users={"pumpops": "s3cret", PUBLISHER: "plant"})
    await plant.start()
    try:
        wrong = MqttSource(
            MqttSourceSettings(
                name="uns",
                port=plant.port,
                topic="acme/north/{pump}/{sensor}",
                username="pumpops",
                password=SecretStr("nope"),
            ),
            reconnect_min=0.05,
            reconnect_max=0.2,
        )
        refused = Collected()
        task = asyncio.create_task(wrong.run(refused.sink, refused.on_status))
        await refused.until(lambda: refused.states.count(SourceState.FAILED) >= 2, "two refused attempts")
        await stop_source(task)
        assert SourceState.CONNECTED not in refused.states
        detail = refused.statuses[-2].detail.lower()
        assert "nope" not in detail and "s3cret" not in detail  # the password is never shown
        assert "auth" in detail or "refused" in detail or "not authorized" in detail, detail

        right = MqttSource(
            MqttSourceSettings(
                name="uns",
                port=plant.port,
                topic="acme/north/{pump}/{sensor}",
                username="pumpops",
                password=SecretStr("s3cret"),
            ),
            reconnect_min=0.05,
            reconnect_max=0.2,
        )
        got = Collected()
        task = asyncio.create_task(right.run(got.sink, got.on_status))
        await got.connected()
        async with aiomqtt.Client(
            "127.0.0.1", plant.port, identifier=PUBLISHER, username=PUBLISHER, password="plant"
        ) as client:
            await client.publish("acme/north/PUMP-002/flow", payload(88.0, T0), qos=1)
        await got.until(lambda: len(got.readings) == 1, "a reading")
        await stop_source(task)
    finally:
        await plant.stop()
    assert got.readings[0].value == 88.0


def _kept(port: int, *, persistent: bool, client_id: str | None = None) -> MqttSource:
    settings = MqttSourceSettings(
        name="station1",
        port=port,
        topic="acme/north/{pump}/{sensor}",
        persistent_session=persistent,
        client_id=client_id,
    )
    return MqttSource(settings, reconnect_min=0.05, reconnect_max=0.2)


async def test_the_session_is_clean_unless_persistent_session_asks_to_keep_it(broker: MqttBroker) -> None:
    for persistent in (False, True):
        got = Collected()
        source = _kept(broker.port, persistent=persistent, client_id=f"pumpops-{persistent}")
        task = asyncio.create_task(source.run(got.sink, got.on_status))
        await got.connected()
        await stop_source(task)
    assert [c for c in broker.connects if c[0].startswith("pumpops-")] == [
        ("pumpops-False", True),
        ("pumpops-True", False),
    ]


@pytest.mark.mosquitto
@pytest.mark.parametrize("persistent", [True, False])
async def test_a_kept_session_gets_the_values_published_while_the_source_was_away(
    tmp_path: Path, persistent: bool
) -> None:
    mosquitto = Mosquitto(tmp_path, free_port())
    await mosquitto.start()
    try:
        first = Collected()
        task = asyncio.create_task(_kept(mosquitto.port, persistent=persistent).run(first.sink, first.on_status))
        await first.connected()
        await stop_source(task)  # the source is away (its connection closed); the broker keeps a kept session
        topic = "acme/north/PUMP-007/vibration"
        await _publish(mosquitto.port, *((topic, payload(4.0 + k, T0 + timedelta(seconds=k))) for k in range(3)))
        again = Collected()
        task = asyncio.create_task(_kept(mosquitto.port, persistent=persistent).run(again.sink, again.on_status))
        await again.connected()
        await _publish(mosquitto.port, (topic, payload(9.0, T0 + timedelta(seconds=10))))
        await again.until(lambda: any(r.value == 9.0 for r in again.readings), "the live value")
        await stop_source(task)
        queued = sorted(r.value for r in again.readings if r.value != 9.0)
        assert queued == ([4.0, 5.0, 6.0] if persistent else [])
    finally:
        await mosquitto.stop()
