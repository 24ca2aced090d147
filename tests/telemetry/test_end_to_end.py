"""End to end, over each protocol: a value rises past its threshold on a real OPC UA server or MQTT broker; the
telemetry service stores it, raises an alarm only after the configured time (none while the value only flaps), and
clears it; automatic triage writes the result to a file sink and POSTs it to a webhook; `pumpops ask` sees it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from rich.console import Console

from doors.auto_triage import AutoTriage, TriageStatus
from doors.cli.ask_cmd import _ask
from doors.cli.common import CliState
from kernel_setup import AppContext, Settings, load_settings, open_app
from storage import Database
from telemetry.service import TelemetryService
from telemetry.sources.mqtt_payload import payload
from telemetry.status import read_statuses
from tests.callers import person
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.postgres_server import database_section
from tests.telemetry.plant_servers import MqttBroker, OpcUaPlant, free_port
from twin.models import SensorType

PUMP = "PUMP-001"
RAISE_AFTER = 3.0
CLEAR_AFTER = 2.0
WAIT_SECONDS = 15.0
ANSWER = "PUMP-001 vibrates beyond its alarm threshold; have it inspected.\nURGENCY: immediate"

Publish = Callable[[float, datetime], Awaitable[None]]


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after WAIT_SECONDS."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def scalar(db: Database, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = await db.fetch_one(sql, params)
    assert row is not None
    return row[0]


async def stored(db: Database, count: int) -> bool:
    found = await scalar(
        db,
        "SELECT count(*) FROM readings JOIN sensors USING (sensor_id) "
        "WHERE pump_id = ? AND sensor_type = 'vibration' AND recorded_at >= ?",
        (PUMP, "2026-01-01"),
    )
    return int(found) >= count


async def telemetry_alarms(db: Database) -> list[Any]:
    return await db.fetch_all(
        "SELECT alarm_id, severity, active, raised_at, cleared_at FROM alarms "
        "WHERE pump_id = ? AND sensor_type = 'vibration' ORDER BY alarm_id",
        (PUMP,),
    )


class Plant:
    """One protocol's plant side: a real server or broker, the settings a source needs, and a way to publish."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._broker: MqttBroker | None = None
        self._server: OpcUaPlant | None = None
        self._client: aiomqtt.Client | None = None

    async def __aenter__(self) -> Plant:
        if self.kind == "mqtt":
            self._broker = MqttBroker(free_port())
            await self._broker.start()
            self._client = aiomqtt.Client("127.0.0.1", self._broker.port, identifier="e2e-plant")
            await self._client.__aenter__()
        else:
            self._server = OpcUaPlant(free_port(), [f"{PUMP}.vibration"])
            await self._server.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._client is not None:
            await self._client.__aexit__(None, None, None)
        if self._broker is not None:
            await asyncio.wait_for(self._broker.stop(), 10)
        if self._server is not None:
            await self._server.stop()

    def source(self) -> dict[str, Any]:
        if self._broker is not None:
            return {"Mqtt": [{"Name": "broker", "Port": self._broker.port, "Topic": "site/{pump}/{sensor}"}]}
        assert self._server is not None
        node = self._server.variables[f"{PUMP}.vibration"].node_id
        nodes = [{"Pump": PUMP, "Sensor": "vibration", "NodeId": node}]
        return {
            "OpcUa": [{"Name": "server", "Endpoint": self._server.endpoint, "SamplingIntervalMs": 20, "Nodes": nodes}]
        }

    async def publish(self, value: float, at: datetime) -> None:
        if self._client is not None:
            await self._client.publish(f"site/{PUMP}/vibration", payload(value, at, SensorType.VIBRATION), qos=1)
        else:
            assert self._server is not None
            await self._server.set(f"{PUMP}.vibration", value, at)
            await asyncio.sleep(0.06)  # beyond the sampling interval, so each value is a change the server reports


class Webhook:
    """A local HTTP endpoint that records the JSON bodies POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(h.split(b":", 1)[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
        self.bodies.append(json.loads(await reader.readexactly(length)))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    hook = Webhook()
    server = await asyncio.start_server(hook.handle, "127.0.0.1", 0)
    hook.port = server.sockets[0].getsockname()[1]
    async with server:
        yield hook


def write_settings(tmp_path: Path, database: str | Path, plant: Plant, webhook: Webhook) -> Path:
    """The settings file for ``plant``, on ``database`` (the test's `database_target`, either backend)."""
    path = tmp_path / "appsettings.json"
    document = {
        "Database": database_section(database, "plant.db"),
        "Qdrant": {"Path": ":memory:"},
        "Agent": {"ParkedAnswer": False, "StatusQuestions": False, "FollowUpCalls": False},
        "Telemetry": {"FlushSeconds": 0.1, "ReconnectMinSeconds": 0.05, "ReconnectMaxSeconds": 0.2, **plant.source()},
        "Alarms": {"RaiseAfterSeconds": RAISE_AFTER, "ClearAfterSeconds": CLEAR_AFTER, "DeadbandPercent": 5},
        "Triage": {"File": "triage.jsonl", "WebhookUrl": f"http://127.0.0.1:{webhook.port}/hook", "PollSeconds": 0.1},
    }
    path.write_text(json.dumps(document))
    return path


async def threshold(app: AppContext) -> float:
    return float(
        await scalar(
            app.db, "SELECT alarm_threshold FROM sensors WHERE pump_id = ? AND sensor_type = 'vibration'", (PUMP,)
        )
    )


@pytest.mark.parametrize("kind", ["mqtt", "opcua"])
async def test_a_rising_value_raises_one_alarm_after_the_duration_which_is_triaged_delivered_and_asked_about(
    tmp_path: Path, database_target: str | Path, webhook: Webhook, kind: str
) -> None:
    async with Plant(kind) as plant:
        settings_file = write_settings(tmp_path, database_target, plant, webhook)
        settings: Settings = load_settings(settings_file, env={})
        fake = ScriptedOllama([reply(tool_calls=[call("alarms-list_alarms", pump_id=PUMP)]), reply(ANSWER)])
        async with open_app(settings, chat_transport=fake.transport()) as app:
            limit = await threshold(app)
            triage = AutoTriage(app, settings.triage)
            await triage.run_once()  # the sample fleet's alarms are history, recorded as skipped
            before = len(await telemetry_alarms(app.db))
            stop = asyncio.Event()
            service = TelemetryService(app.db, settings.telemetry, settings.alarms)
            running = asyncio.create_task(service.run(stop))
            try:
                await until(lambda: _connected(service), f"the {kind} source to connect")
                # Source timestamps run ahead of the value the OPC UA server held at connection (stamped now): the
                # rules ignore a reading older than the last one they saw of its sensor.
                start = datetime.now(UTC) + timedelta(seconds=1)
                # Flapping: beyond the threshold for one second at a time, never the RAISE_AFTER it takes.
                for second in range(8):
                    value = limit * (1.04 if second % 2 == 0 else 0.97)
                    await plant.publish(value, start + timedelta(seconds=second))
                await until(lambda: stored(app.db, 8), "the flapping values to be stored")
                assert len(await telemetry_alarms(app.db)) == before, "a flapping value raised an alarm"

                # Beyond for longer than RAISE_AFTER: one alarm, raised from when it went beyond.
                for second in range(10, 16):
                    await plant.publish(limit * 1.3, start + timedelta(seconds=second))

                async def raised() -> bool:
                    return len(await telemetry_alarms(app.db)) == before + 1

                await until(raised, "the alarm to be raised")

                async def counted() -> bool:  # `telemetry status` sees the counters while the service runs
                    return any(r.received >= 8 and r.state.value == "connected" for r in await read_statuses(app.db))

                await until(counted, "the source's counters in telemetry_sources")
                alarm = (await telemetry_alarms(app.db))[-1]
                assert alarm["active"] == 1
                assert alarm["raised_at"] == (start + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%SZ")

                # Back inside past the deadband for longer than CLEAR_AFTER: the alarm clears.
                for second in range(16, 20):
                    await plant.publish(limit * 0.8, start + timedelta(seconds=second))

                async def cleared() -> bool:
                    return (await telemetry_alarms(app.db))[-1]["active"] == 0

                await until(cleared, "the alarm to clear")
            finally:
                stop.set()
                counts = await asyncio.wait_for(running, 20)
            assert counts.alarms_raised == 1 and counts.stored >= 18

            # The raised alarm is triaged, written to the file sink and posted to the webhook. It cleared before
            # its turn here, so the alarm is made active again first: triage skips alarms that already cleared.
            async with app.db.transaction() as conn:
                await conn.execute("UPDATE alarms SET active = 1, cleared_at = NULL WHERE alarm_id = ?", (alarm[0],))
            records = await triage.run_once()
            assert [(r.alarm_id, r.status) for r in records] == [(alarm[0], TriageStatus.TRIAGED)]
            lines = [json.loads(line) for line in (tmp_path / "triage.jsonl").read_text().splitlines()]
            assert lines[-1]["alarm_id"] == alarm[0] and lines[-1]["urgency"] == "immediate"
            assert webhook.bodies and webhook.bodies[-1]["alarm_id"] == alarm[0]

    # `pumpops ask` (its code path, with a scripted model) reads the alarms and sees the new one.
    asked = ScriptedOllama(
        [reply(tool_calls=[call("alarms-list_alarms", pump_id=PUMP)]), reply(f"{PUMP} has alarm {alarm[0]}.")]
    )
    console = Console(file=StringIO(), width=120)
    cli = CliState(settings_path=str(settings_file), console=console, err_console=console)
    cli._settings = settings
    result = await _ask(
        cli, f"What's wrong with {PUMP}?", None, person("alice", door="cli"), True, transport=asked.transport()
    )
    [tool_message] = asked.tool_messages(1)
    assert alarm[0] in tool_message["content"]
    assert alarm[0] in result.answer


async def _connected(service: TelemetryService) -> bool:
    return any(status.state.value == "connected" for status in service.board.latest.values())
