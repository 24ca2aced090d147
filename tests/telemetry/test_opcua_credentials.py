"""The OPC UA source signs in with the configured username and password; a wrong one is reported, never shown."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, cast

from asyncua import Server, ua
from asyncua.crypto.permission_rules import User, UserRole
from asyncua.server.user_managers import UserManager
from pydantic import SecretStr

from kernel_setup.plant_settings import OpcUaNode, OpcUaSourceSettings
from telemetry.sources.base import SourceState
from telemetry.sources.opcua import OpcUaSource
from tests.telemetry.conftest import Collected, stop_source
from tests.telemetry.plant_servers import free_port

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


class Passwords(UserManager):
    """Admits only the given usernames with their passwords (no anonymous sessions)."""

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users

    def get_user(
        self, iserver: Any, username: str | None = None, password: str | None = None, certificate: Any = None
    ) -> User | None:
        if username is not None and self._users.get(username) == password:
            return User(role=UserRole.User, name=username)
        return None


def _source(endpoint: str, node_id: str, password: str) -> OpcUaSource:
    settings = OpcUaSourceSettings(
        name="plc",
        endpoint=endpoint,
        username="pumpops",
        password=SecretStr(password),
        sampling_interval_ms=10,
        nodes=(OpcUaNode(pump="PUMP-001", sensor="vibration", node_id=node_id),),
    )
    return OpcUaSource(settings, reconnect_min=0.05, reconnect_max=0.2)


async def test_a_server_that_wants_a_password_admits_the_configured_one_and_a_wrong_one_is_reported() -> None:
    server = Server(user_manager=Passwords({"pumpops": "s3cret"}))
    await server.init()
    endpoint = f"opc.tcp://127.0.0.1:{free_port()}/pumpops/"
    server.set_endpoint(endpoint)
    server.set_security_IDs(["Username"])  # no anonymous sessions
    namespace = await server.register_namespace("urn:pumpops:test-credentials")
    node_id = f"ns={namespace};s=P1.Vibration"
    variable = await server.nodes.objects.add_variable(node_id, "P1.Vibration", 0.0, varianttype=ua.VariantType.Double)
    async with server:
        refused = Collected()
        task = asyncio.create_task(_source(endpoint, node_id, "nope").run(refused.sink, refused.on_status))
        await refused.until(lambda: refused.states.count(SourceState.FAILED) >= 2, "two refused attempts")
        await stop_source(task)
        assert SourceState.CONNECTED not in refused.states
        assert all("nope" not in s.detail and "s3cret" not in s.detail for s in refused.statuses)
        assert "The server refused user 'pumpops': check Username and Password" in refused.statuses[-2].detail

        got = Collected()
        task = asyncio.create_task(_source(endpoint, node_id, "s3cret").run(got.sink, got.on_status))
        await got.connected()
        await variable.write_value(
            ua.DataValue(ua.Variant(6.5, ua.VariantType.Double), SourceTimestamp=cast("ua.DateTime", T0))
        )
        await got.until(lambda: any(r.value == 6.5 for r in got.readings), "the value")
        await stop_source(task)
