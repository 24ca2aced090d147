"""The OPC UA source against a real asyncua server that offers only Basic256Sha256 with SignAndEncrypt.

With its certificate and key (and the server's certificate pinned) the source connects and its readings are
stored; without security, with another policy or mode, with a certificate the server does not trust, or against a
server presenting another certificate than the pinned one, the source reports failed saying why, and the service
goes on. Nodes the server lacks are kept in the source's status for `pumpops telemetry status`.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from asyncua import ua

from kernel_setup import load_settings, open_app
from kernel_setup.plant_settings import OpcUaNode, OpcUaSourceSettings
from telemetry.service import TelemetryService
from telemetry.sources.base import SourceState
from telemetry.sources.opcua import OpcUaSource
from telemetry.status import read_statuses
from tests.postgres_server import database_section
from tests.telemetry.conftest import Collected
from tests.telemetry.secured_plant import AppCertificate, SecuredPlant, app_certificate

PUMP = "PUMP-001"
WAIT_SECONDS = 15.0
SECURED = {"security_policy": "Basic256Sha256", "security_mode": "SignAndEncrypt"}


def _settings(plant: SecuredPlant, client: AppCertificate | None, **overrides: Any) -> OpcUaSourceSettings:
    node_id, _ = plant.nodes["P1"]
    security: dict[str, Any] = (
        {**SECURED, "certificate": str(client.certificate), "private_key": str(client.private_key)}
        if client is not None
        else {}
    )
    return OpcUaSourceSettings(
        name="plc",
        endpoint=plant.endpoint,
        sampling_interval_ms=10,
        nodes=(OpcUaNode(pump=PUMP, sensor="vibration", node_id=node_id),),
        **{**security, **overrides},
    )


async def _failure(settings: OpcUaSourceSettings) -> str:
    """The detail the source reports when its first attempt fails (it must not connect)."""
    got = Collected()
    task = asyncio.create_task(
        OpcUaSource(settings, reconnect_min=0.05, reconnect_max=0.2).run(got.sink, got.on_status)
    )
    try:
        await got.until(lambda: SourceState.FAILED in got.states, "the attempt to fail")
    finally:
        task.cancel()
        await task
    assert SourceState.CONNECTED not in got.states
    return next(s.detail for s in got.statuses if s.state is SourceState.FAILED)


async def _write(plant: SecuredPlant, value: float, at: datetime) -> None:
    _, node = plant.nodes["P1"]
    stamp = cast("ua.DateTime", at)
    await cast("Any", node).write_value(ua.DataValue(ua.Variant(value, ua.VariantType.Double), SourceTimestamp=stamp))


async def _until(condition: Any, what: str) -> None:
    """Poll the async ``condition`` until it holds; fail naming ``what`` after WAIT_SECONDS."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_the_secured_source_is_read_and_stored_while_an_unsecured_one_is_refused_and_lacking_nodes_are_shown(
    tmp_path: Path, database_target: str | Path
) -> None:
    client = app_certificate(tmp_path / "client", "pumpops")
    async with SecuredPlant(tmp_path / "plant", ["P1"], trusted=[client]) as plant:
        node_id, _ = plant.nodes["P1"]
        nodes = [
            {"Pump": PUMP, "Sensor": "vibration", "NodeId": node_id},
            {"Pump": PUMP, "Sensor": "flow", "NodeId": "ns=2;s=NoSuchNode"},
        ]
        secured = {
            "Name": "secured",
            "Endpoint": plant.endpoint,
            "SecurityPolicy": "Basic256Sha256",
            "SecurityMode": "SignAndEncrypt",
            "Certificate": str(client.certificate),
            "PrivateKey": str(client.private_key),
            "ServerCertificate": str(plant.certificate.certificate),
            "SamplingIntervalMs": 10,
            "Nodes": nodes,
        }
        unsecured = {"Name": "unsecured", "Endpoint": plant.endpoint, "SamplingIntervalMs": 10, "Nodes": nodes[:1]}
        settings_file = tmp_path / "appsettings.json"
        document = {
            "Database": database_section(database_target, str(tmp_path / "plant.db")),
            "Qdrant": {"Path": ":memory:"},
            "Telemetry": {
                "FlushSeconds": 0.1,
                "ReconnectMinSeconds": 0.05,
                "ReconnectMaxSeconds": 0.2,
                "OpcUa": [secured, unsecured],
            },
        }
        settings_file.write_text(json.dumps(document))
        settings = load_settings(settings_file, env={})
        async with open_app(settings) as app:
            stop = asyncio.Event()
            service = TelemetryService(app.db, settings.telemetry, settings.alarms)
            running = asyncio.create_task(service.run(stop))
            try:
                board = service.board

                async def secured_connected() -> bool:
                    status = board.latest.get("secured")
                    return status is not None and status.state is SourceState.CONNECTED

                await _until(secured_connected, "the secured source to connect")
                at = datetime.now(UTC) + timedelta(seconds=1)
                await _write(plant, 4.25, at)

                async def stored() -> bool:
                    row = await app.db.fetch_one(
                        "SELECT count(*) FROM readings JOIN sensors USING (sensor_id) "
                        "WHERE pump_id = ? AND sensor_type = 'vibration' AND value = ?",
                        (PUMP, 4.25),
                    )
                    return row is not None and row[0] == 1

                await _until(stored, "the secured source's reading to be stored")

                async def recorded() -> bool:  # what `pumpops telemetry status` reads
                    records = {r.name: r for r in await read_statuses(app.db)}
                    return (
                        "unsecured" in records
                        and records["unsecured"].state.value == "failed"
                        and "secured" in records
                        and records["secured"].received >= 1
                    )

                await _until(recorded, "both sources' statuses in telemetry_sources")
                records = {r.name: r for r in await read_statuses(app.db)}
                assert records["secured"].state.value == "connected"
                assert records["secured"].refused == ["ns=2;s=NoSuchNode (BadNodeIdUnknown)"]
                assert records["unsecured"].detail == (
                    "the server offers no endpoint with SecurityPolicy None and SecurityMode None; it offers "
                    "Basic256Sha256/SignAndEncrypt (SecurityPolicy/SecurityMode)"
                )
                assert records["unsecured"].received == 0
                assert not running.done(), "the service goes on while one source is refused"
            finally:
                stop.set()
                await asyncio.wait_for(running, WAIT_SECONDS)


async def test_another_policy_or_mode_than_the_server_offers_is_refused_naming_what_it_offers(tmp_path: Path) -> None:
    client = app_certificate(tmp_path / "client", "pumpops")
    async with SecuredPlant(tmp_path / "plant", ["P1"]) as plant:
        policy = await _failure(_settings(plant, client, security_policy="Aes128Sha256RsaOaep"))
        mode = await _failure(_settings(plant, client, security_mode="Sign"))
    assert policy.startswith("the server offers no endpoint with SecurityPolicy Aes128Sha256RsaOaep and SecurityMode")
    assert mode.startswith("the server offers no endpoint with SecurityPolicy Basic256Sha256 and SecurityMode Sign;")
    assert policy.endswith("it offers Basic256Sha256/SignAndEncrypt (SecurityPolicy/SecurityMode)")


async def test_a_client_certificate_the_server_does_not_trust_is_refused(tmp_path: Path) -> None:
    trusted = app_certificate(tmp_path / "client", "pumpops")
    stranger = app_certificate(tmp_path / "stranger", "stranger")
    async with SecuredPlant(tmp_path / "plant", ["P1"], trusted=[trusted]) as plant:
        detail = await _failure(_settings(plant, stranger))
    assert "BadCertificateUntrusted" in detail


async def test_a_server_presenting_another_certificate_than_the_pinned_one_is_refused_before_any_session(
    tmp_path: Path,
) -> None:
    client = app_certificate(tmp_path / "client", "pumpops")
    impostor = app_certificate(tmp_path / "impostor", "impostor", server=True)
    async with SecuredPlant(tmp_path / "plant", ["P1"]) as plant:
        detail = await _failure(_settings(plant, client, server_certificate=str(impostor.certificate)))
    assert detail.startswith("the server presents a certificate (CN=plant) other than ServerCertificate")
    assert str(impostor.certificate) in detail
