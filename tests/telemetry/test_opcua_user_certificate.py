"""The OPC UA source signs in with an X.509 user certificate: a server that maps the certificate to a user admits
the session and its values arrive; a certificate it does not know is refused and reported. Both or neither of
UserCertificate/UserPrivateKey, never beside Username/Password, and a wrong file is named before any connection.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from asyncua import ua
from asyncua.server.user_managers import CertificateUserManager
from pydantic import SecretStr, ValidationError

from kernel_setup.plant_settings import OpcUaNode, OpcUaSourceSettings
from telemetry.sources.base import SourceState
from telemetry.sources.opcua import OpcUaSource
from telemetry.sources.opcua_security import OpcUaSecurityError
from tests.telemetry.conftest import Collected, stop_source
from tests.telemetry.secured_plant import AppCertificate, SecuredPlant, app_certificate

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def _settings(
    endpoint: str, node_id: str, app: AppCertificate, user: AppCertificate, **more: Any
) -> OpcUaSourceSettings:
    fields: dict[str, Any] = {
        "name": "plc",
        "endpoint": endpoint,
        "security_policy": "Basic256Sha256",
        "security_mode": "SignAndEncrypt",
        "certificate": str(app.certificate),
        "private_key": str(app.private_key),
        "user_certificate": str(user.certificate),
        "user_private_key": str(user.private_key),
        "sampling_interval_ms": 10,
        "nodes": (OpcUaNode(pump="PUMP-001", sensor="vibration", node_id=node_id),),
    }
    return OpcUaSourceSettings(**{**fields, **more})


async def test_a_known_user_certificate_signs_in_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    app = app_certificate(tmp_path / "client", "pumpops")
    operator = app_certificate(tmp_path / "users", "operator")
    stranger = app_certificate(tmp_path / "users", "stranger")
    users = CertificateUserManager()
    await users.add_user(operator.certificate, name="operator")
    async with SecuredPlant(tmp_path / "plant", ["P1"], trusted=[app], users=users) as plant:
        node_id, node = plant.nodes["P1"]

        refused = Collected()
        source = OpcUaSource(_settings(plant.endpoint, node_id, app, stranger), reconnect_min=0.05, reconnect_max=0.2)
        task = asyncio.create_task(source.run(refused.sink, refused.on_status))
        await refused.until(lambda: refused.states.count(SourceState.FAILED) >= 2, "two refused attempts")
        await stop_source(task)
        assert SourceState.CONNECTED not in refused.states
        assert refused.statuses[-2].detail, "a refused sign-in says why"
        assert "The server refused UserCertificate" in refused.statuses[-2].detail

        got = Collected()
        source = OpcUaSource(_settings(plant.endpoint, node_id, app, operator), reconnect_min=0.05, reconnect_max=0.2)
        task = asyncio.create_task(source.run(got.sink, got.on_status))
        await got.connected()
        stamp = cast("ua.DateTime", T0)
        await cast("Any", node).write_value(ua.DataValue(ua.Variant(6.5, ua.VariantType.Double), SourceTimestamp=stamp))
        await got.until(lambda: any(r.value == 6.5 for r in got.readings), "the value")
        await stop_source(task)


def test_user_certificate_and_key_go_together_and_never_beside_a_password(tmp_path: Path) -> None:
    app = app_certificate(tmp_path / "client", "pumpops")
    user = app_certificate(tmp_path / "users", "operator")
    with pytest.raises(ValidationError, match="UserCertificate and UserPrivateKey go together"):
        _settings("opc.tcp://127.0.0.1:4840", "ns=2;s=P1", app, user, user_private_key=None)
    with pytest.raises(ValidationError, match="Username/Password or with UserCertificate/UserPrivateKey, not both"):
        _settings("opc.tcp://127.0.0.1:4840", "ns=2;s=P1", app, user, username="pumpops", password=SecretStr("x"))


def test_a_user_key_that_is_not_the_user_certificates_is_named_before_any_connection(tmp_path: Path) -> None:
    app = app_certificate(tmp_path / "client", "pumpops")
    user = app_certificate(tmp_path / "users", "operator")
    other = app_certificate(tmp_path / "users", "other")
    settings = _settings("opc.tcp://127.0.0.1:4840", "ns=2;s=P1", app, user, user_private_key=str(other.private_key))
    with pytest.raises(OpcUaSecurityError) as refused:
        OpcUaSource(settings, reconnect_min=0.05, reconnect_max=0.2)
    message = str(refused.value)
    assert "UserPrivateKey" in message and "is not the key of UserCertificate" in message
    missing = _settings("opc.tcp://127.0.0.1:4840", "ns=2;s=P1", app, user, user_certificate=str(tmp_path / "no.pem"))
    with pytest.raises(OpcUaSecurityError, match=r"UserCertificate file .* does not exist"):
        OpcUaSource(missing, reconnect_min=0.05, reconnect_max=0.2)
