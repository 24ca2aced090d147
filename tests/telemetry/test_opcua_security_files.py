"""A secured OPC UA source reads its certificate files when it is built: a missing, unreadable or wrong file is an
error naming the setting, the file and what it must hold, before any connection is tried."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from kernel_setup.plant_settings import OpcUaSourceSettings
from telemetry.sources.opcua import OpcUaSource
from telemetry.sources.opcua_security import OpcUaSecurityError, load_security
from tests.telemetry.secured_plant import AppCertificate, app_certificate


def _settings(certificate: Path, key: Path, server: Path | None = None) -> OpcUaSourceSettings:
    return OpcUaSourceSettings(
        name="plc",
        endpoint="opc.tcp://127.0.0.1:4840",
        security_policy="Basic256Sha256",
        security_mode="SignAndEncrypt",
        certificate=str(certificate),
        private_key=str(key),
        server_certificate=str(server) if server is not None else None,
    )


def _source(certificate: Path, key: Path, server: Path | None = None) -> OpcUaSource:
    return OpcUaSource(_settings(certificate, key, server), reconnect_min=0.05, reconnect_max=0.2)


@pytest.fixture
def client(tmp_path: Path) -> AppCertificate:
    return app_certificate(tmp_path / "client", "pumpops")


def _refusal(certificate: Path, key: Path, server: Path | None = None) -> str:
    with pytest.raises(OpcUaSecurityError) as refused:
        _source(certificate, key, server)
    return str(refused.value)


def test_a_missing_certificate_file_is_named_with_what_a_certificate_file_is(
    client: AppCertificate, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "client.pem"
    message = _refusal(missing, client.private_key)
    assert message.startswith(f"Telemetry.OpcUa source 'plc': Certificate file '{missing}' does not exist; give ")
    assert "X.509 certificate file, PEM" in message and "subjectAltName=URI:" in message


def test_an_unreadable_key_file_and_a_file_that_is_no_certificate_are_named(client: AppCertificate) -> None:
    folder = client.certificate.parent
    message = _refusal(client.certificate, folder)  # a folder cannot be read as a file
    assert f"PrivateKey file '{folder}' cannot be read" in message and "RSA private key file" in message
    garbage = folder / "garbage.pem"
    garbage.write_text("not a certificate")
    assert f"Certificate file '{garbage}' is not a certificate" in _refusal(garbage, client.private_key)
    assert f"PrivateKey file '{garbage}' is not a private key" in _refusal(client.certificate, garbage)
    assert f"ServerCertificate file '{garbage}' is not a certificate" in _refusal(
        client.certificate, client.private_key, garbage
    )


def test_a_key_that_is_not_the_certificates_or_not_rsa_is_refused(client: AppCertificate, tmp_path: Path) -> None:
    other = app_certificate(tmp_path / "other", "other")
    assert "is not the key of Certificate" in _refusal(client.certificate, other.private_key)
    ec_key = tmp_path / "ec.key"
    ec_key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    assert "the OPC UA security policies need RSA" in _refusal(client.certificate, ec_key)


def test_a_certificate_without_an_application_uri_is_refused_saying_opc_ua_needs_one(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bare")])
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "bare.der", tmp_path / "bare.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.DER))  # DER is read as well as PEM
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    assert "names no application URI; OPC UA needs one in its subjectAltName" in _refusal(cert_file, key_file)


def test_good_files_give_the_client_its_application_uri_from_the_certificate(client: AppCertificate) -> None:
    settings = _settings(client.certificate, client.private_key)
    security = load_security(settings)
    assert security is not None and security.application_uri == "urn:pumpops:test:pumpops"
    assert security.server_certificate is None
    assert load_security(settings.model_copy(update={"security_policy": "None", "security_mode": "None"})) is None
