"""Real plant-side servers for the source tests, in-process on 127.0.0.1: an amqtt broker and an asyncua server;
and Debian's mosquitto as a process, for what amqtt lacks (kept sessions), where it is installed.

Each records what reaches it from clients, so a test can prove a source only reads: the broker every message a
client published (with the client's id), the OPC UA server every service request by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import pytest
from amqtt.broker import Broker
from amqtt.plugins.authentication import BaseAuthPlugin
from amqtt.plugins.base import BasePlugin
from asyncua import Server, ua
from asyncua.server.uaprocessor import UaProcessor


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (a restarted server must come back on the same port, so not port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class TcpProxy:
    """A TCP relay on 127.0.0.1 in front of a server: `drop` cuts every connection, as a failing network would.

    The MQTT tests drop connections here rather than by shutting the broker down: amqtt's shutdown can hang on
    Python 3.11 while a client is connected (its reader loop's `asyncio.wait_for` swallows the cancellation), and
    a dropped network is the failure a source meets in a plant anyway; the broker keeps the persistent session.
    """

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self._target = target_port
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def drop(self) -> None:
        """Stop accepting, cut every open connection, and wait until the relays have ended."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._target)
            except OSError:
                writer.transport.abort()
                return
            self._writers += [writer, upstream_writer]
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            self._tasks.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()


class PublishRecorder(BasePlugin[Any]):
    """An amqtt broker plugin that records every application message a client publishes (client id, topic) and
    every connect (client id, the CONNECT packet's clean-session flag)."""

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.published: list[tuple[str, str]] = []
        self.connects: list[tuple[str, bool]] = []

    async def on_broker_message_received(self, *, client_id: str, message: Any) -> None:
        self.published.append((client_id, message.topic))

    async def on_broker_client_connected(self, *, client_id: str, client_session: Any) -> None:
        self.connects.append((client_id, bool(client_session.clean_session)))


class PasswordCheck(BaseAuthPlugin):
    """An amqtt authentication plugin that admits only the usernames and passwords the test gave its broker."""

    users: dict[str, str] = {}  # noqa: RUF012 - replaced per broker right after the plugin is built

    async def authenticate(self, *, session: Any) -> bool:
        return bool(session.username) and self.users.get(session.username) == session.password


class Mosquitto:
    """Debian's mosquitto on 127.0.0.1:``port``, anonymous, sessions kept in memory (a broker that keeps sessions,
    which amqtt 0.12 does not deliver from); `start` skips the test when the binary is not installed."""

    def __init__(self, folder: Path, port: int) -> None:
        self.port = port
        self._config = folder / "mosquitto.conf"
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        binary = shutil.which("mosquitto", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))
        if binary is None:
            pytest.skip("mosquitto is not installed (Debian: apt-get install mosquitto)")
        self._config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self._process = await asyncio.create_subprocess_exec(
            binary, "-c", str(self._config), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if asyncio.get_running_loop().time() > deadline:
                    raise AssertionError("mosquitto did not start listening within 10 s") from None
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()


class MqttBroker:
    """An amqtt broker on 127.0.0.1:``port`` that can be stopped and started again on the same port.

    With ``users`` it admits only those usernames with their passwords; else anyone.
    """

    def __init__(self, port: int, users: dict[str, str] | None = None) -> None:
        self.port = port
        self._users = users
        self._broker: Broker | None = None
        self.published: list[tuple[str, str]] = []
        """Every (client id, topic) published to this broker across its restarts."""
        self.connects: list[tuple[str, bool]] = []
        """Every (client id, clean session) connect to this broker across its restarts."""

    async def start(self) -> None:
        auth = (
            {f"{__name__}.PasswordCheck": {}}
            if self._users is not None
            else {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}
        )
        config = {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{self.port}"}},
            "plugins": {**auth, f"{__name__}.PublishRecorder": {}},
        }
        self._broker = Broker(config)
        recorder = next(p for p in self._broker.plugins_manager.plugins if isinstance(p, PublishRecorder))
        recorder.published = self.published
        recorder.connects = self.connects
        for plugin in self._broker.plugins_manager.plugins:
            if isinstance(plugin, PasswordCheck):
                plugin.users = dict(self._users or {})
        await self._broker.start()

    async def stop(self) -> None:
        if self._broker is not None:
            await self._broker.shutdown()
            self._broker = None


@dataclass
class PlantVariable:
    """A variable the test server serves, by the node id a source's settings name it with."""

    node_id: str
    node: Any


class OpcUaPlant:
    """An asyncua server on 127.0.0.1:``port`` serving Double variables under ``ns=2;s=<name>``."""

    def __init__(self, port: int, names: list[str]) -> None:
        self.port = port
        self.endpoint = f"opc.tcp://127.0.0.1:{port}/pumpops/"
        self._names = names
        self._server: Server | None = None
        self.variables: dict[str, PlantVariable] = {}

    async def start(self) -> None:
        """Serve; the first start builds the address space (seconds), a restart reuses it."""
        if self._server is None:
            server = Server()
            await server.init()
            server.set_endpoint(self.endpoint)
            namespace = await server.register_namespace("urn:pumpops:test-plant")
            station = await server.nodes.objects.add_object(namespace, "Station1")
            for name in self._names:
                node_id = f"ns={namespace};s={name}"
                node = await station.add_variable(node_id, name, 0.0, varianttype=ua.VariantType.Double)
                self.variables[name] = PlantVariable(node_id=node_id, node=node)
            self._server = server
        await self._server.start()

    async def set(self, name: str, value: float, at: datetime | None = None, *, bad: bool = False) -> None:
        """Give ``name`` a new value, stamped ``at`` (the source timestamp), or a bad status."""
        status = ua.StatusCode(ua.UInt32(ua.StatusCodes.BadSensorFailure if bad else ua.StatusCodes.Good))
        stamp = cast("ua.DateTime | None", at)  # asyncua's DateTime is a datetime
        data = ua.DataValue(ua.Variant(value, ua.VariantType.Double), StatusCode=status, SourceTimestamp=stamp)
        await self.variables[name].node.write_value(data)

    async def stop(self) -> None:
        """Stop serving: every client connection closes."""
        if self._server is not None:
            await self._server.stop()


@contextmanager
def recorded_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every OPC UA service request any server in this process receives, by name (``ReadRequest``, ...).

    Hooks the one place asyncua's server dispatches a decoded request by its type, so nothing a client sends can
    pass unrecorded.
    """
    names: list[str] = []
    original = UaProcessor._process_message

    async def recording(self: UaProcessor, typeid: ua.NodeId, *args: Any, **kwargs: Any) -> Any:
        name = ua.ObjectIdNames.get(typeid.Identifier, str(typeid)) if isinstance(typeid.Identifier, int) else ""
        names.append(name.removesuffix("_Encoding_DefaultBinary") or str(typeid))
        return await original(self, typeid, *args, **kwargs)

    monkeypatch.setattr(UaProcessor, "_process_message", recording)
    yield names
