"""The MQTT source over TLS: it verifies the broker's certificate against the configured CA file, and refuses a
broker whose certificate it cannot verify (reported as a failed source, never read from)."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from amqtt.broker import Broker
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kernel_setup.plant_settings import MqttSourceSettings
from telemetry.sources.base import SourceState
from telemetry.sources.mqtt import MqttSource
from telemetry.sources.mqtt_payload import payload
from tests.telemetry.conftest import Collected, stop_source
from tests.telemetry.plant_servers import free_port

T0 = dt.datetime(2025, 3, 1, 10, 0, tzinfo=dt.UTC)


def self_signed(folder: Path, name: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key (it is its own CA), as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / f"{name}.pem", folder / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@pytest.fixture
async def tls_broker(tmp_path: Path) -> Any:
    cert_file, key_file = self_signed(tmp_path, "broker")
    port = free_port()
    listener = {"type": "tcp", "bind": f"127.0.0.1:{port}", "ssl": True, "certfile": str(cert_file)}
    listener["keyfile"] = str(key_file)
    broker = Broker(
        {
            "listeners": {"default": listener},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        }
    )
    await broker.start()
    yield port, cert_file
    await asyncio.wait_for(broker.shutdown(), 10)


def _source(port: int, ca_file: Path) -> MqttSource:
    settings = MqttSourceSettings(
        name="tls", port=port, tls=True, ca_file=str(ca_file), topic="acme/north/{pump}/{sensor}"
    )
    return MqttSource(settings, reconnect_min=0.05, reconnect_max=0.2)


async def test_a_broker_verified_by_the_configured_ca_file_is_read(tls_broker: Any, tmp_path: Path) -> None:
    port, ca_file = tls_broker
    got = Collected()
    task = asyncio.create_task(_source(port, ca_file).run(got.sink, got.on_status))
    try:
        await got.connected()
        context = ssl.create_default_context(cafile=str(ca_file))
        async with aiomqtt.Client("127.0.0.1", port, identifier="plant", tls_context=context) as client:
            await client.publish("acme/north/PUMP-005/vibration", payload(2.5, T0), qos=1)
        await got.until(lambda: len(got.readings) == 1, "a reading over TLS")
    finally:
        await stop_source(task)
    assert got.readings[0].value == 2.5


# paho (under aiomqtt) leaves the socket of a failed TLS handshake to the garbage collector, whose ResourceWarning
# pytest turns into an error; the source's behaviour under test is the refusal and its report.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_broker_whose_certificate_the_ca_file_does_not_vouch_for_is_refused(
    tls_broker: Any, tmp_path: Path
) -> None:
    port, _ = tls_broker
    other_ca, _ = self_signed(tmp_path, "someone-else")
    got = Collected()
    task = asyncio.create_task(_source(port, other_ca).run(got.sink, got.on_status))
    await got.until(lambda: got.states.count(SourceState.FAILED) >= 2, "two refused attempts")
    await stop_source(task)
    gc.collect()  # the leaked sockets go now, under this test's filter, not during a later test
    assert SourceState.CONNECTED not in got.states
    assert "certificate" in got.statuses[-2].detail.lower() or "ssl" in got.statuses[-2].detail.lower()
