"""The MQTT triage sink publishes each report to the configured topic only, on a real broker on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiomqtt
import pytest
from amqtt.broker import Broker

from doors.auto_triage import AutoTriage, MqttSink, TriageStatus
from kernel_setup import open_app
from kernel_setup.errors import SettingsError
from tests.doors.test_auto_triage import ANSWER, add_alarm, baselined, settings_for
from tests.fakes.ollama import ScriptedOllama, reply

TOPIC = "acme/north/pumpops/triage"
DONE = "test/done"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def broker_port() -> AsyncIterator[int]:
    """An amqtt broker on a free port of 127.0.0.1, anonymous clients allowed."""
    port = free_port()
    broker = Broker(
        {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        }
    )
    await broker.start()
    try:
        yield port
    finally:
        await broker.shutdown()


async def test_each_triage_is_published_to_the_triage_topic_only(tmp_path: Path, broker_port: int) -> None:
    source = {"Name": "plant", "Host": "127.0.0.1", "Port": broker_port, "ClientId": "pumpops-plant"}
    settings = settings_for(tmp_path, {"MqttSource": "plant", "MqttTopic": TOPIC}, Telemetry={"Mqtt": [source]})
    fake = ScriptedOllama([reply(ANSWER), reply(ANSWER)])
    async with (
        open_app(settings, chat_transport=fake.transport()) as app,
        aiomqtt.Client("127.0.0.1", broker_port, identifier="watcher") as watcher,
    ):
        await watcher.subscribe("#", qos=1)
        triage = AutoTriage(app, settings.triage)
        assert [type(s) for s in triage.sinks] == [MqttSink]
        await baselined(app, triage)  # history: nothing published
        await add_alarm(app, "ALM-0100")
        [record] = await triage.run_once()
        assert record.status is TriageStatus.TRIAGED
        # Everything the broker carried before our own marker came from the triage.
        await watcher.publish(DONE, b"", qos=1)
        seen: list[tuple[str, bytes]] = []
        async for message in watcher.messages:
            if message.topic.value == DONE:
                break
            assert isinstance(message.payload, bytes)
            seen.append((message.topic.value, message.payload))
    assert [topic for topic, _ in seen] == [TOPIC]
    published = json.loads(seen[0][1])
    assert published["alarm_id"] == "ALM-0100" and published["urgency"] == "within 24 h"
    assert published["status"] == "triaged"


async def test_an_unknown_mqtt_source_for_the_sink_fails_clearly(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    wrong = settings.triage.model_copy(update={"mqtt_source": "nowhere", "mqtt_topic": TOPIC})
    async with open_app(settings) as app:
        with pytest.raises(SettingsError, match=r"Triage.MqttSource 'nowhere' names no Telemetry.Mqtt source"):
            AutoTriage(app, wrong)
