"""The certificate files of a secured OPC UA source, read and checked once when the source is built.

A file that is missing, unreadable, or not a certificate (or key) is an `OpcUaSecurityError` naming the setting,
the file and what it must hold, before any connection is tried: a source cannot recover from it by reconnecting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncua import Client, ua
from asyncua.crypto import security_policies, uacrypto
from asyncua.crypto.uacrypto import CertProperties
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from core.errors import PumpOpsError
from kernel_setup.plant_settings import OpcUaSourceSettings
from telemetry.sources.base import SourceFailure

POLICIES: dict[str, type[security_policies.SecurityPolicy]] = {
    "None": security_policies.SecurityPolicyNone,
    "Basic256Sha256": security_policies.SecurityPolicyBasic256Sha256,
    "Aes128Sha256RsaOaep": security_policies.SecurityPolicyAes128Sha256RsaOaep,
    "Aes256Sha256RsaPss": security_policies.SecurityPolicyAes256Sha256RsaPss,
}
MODES = {
    "None": ua.MessageSecurityMode.None_,
    "Sign": ua.MessageSecurityMode.Sign,
    "SignAndEncrypt": ua.MessageSecurityMode.SignAndEncrypt,
}

CERTIFICATE_HELP = (
    "an X.509 certificate file, PEM ('-----BEGIN CERTIFICATE-----') or DER, "
    "e.g. generated with: openssl req -x509 -newkey rsa:2048 -nodes -keyout pumpops.key -out pumpops.pem "
    "-days 365 -subj /CN=pumpops -addext subjectAltName=URI:urn:pumpops:client "
    "-addext keyUsage=digitalSignature,nonRepudiation,keyEncipherment,dataEncipherment "
    "-addext extendedKeyUsage=clientAuth"
)
KEY_HELP = "an unencrypted RSA private key file, PEM ('-----BEGIN PRIVATE KEY-----') or DER, matching {certificate}"


class OpcUaSecurityError(PumpOpsError):
    """An OPC UA source's certificate or key file is missing, unreadable, or not what it must be."""


@dataclass(frozen=True)
class UserIdentity:
    """The X.509 user certificate a source signs in with, and the key that signs the sign-in."""

    certificate: x509.Certificate
    private_key: rsa.RSAPrivateKey


@dataclass(frozen=True)
class OpcUaSecurity:
    """A secured source's client certificate and key, and the server certificate it pins (if configured), as DER."""

    certificate: bytes
    private_key: bytes
    server_certificate: bytes | None
    application_uri: str
    """The client's application URI: the URI in its certificate's subjectAltName (OPC UA requires them equal)."""


def load_security(settings: OpcUaSourceSettings) -> OpcUaSecurity | None:
    """The source's certificates read from their files, or None for an unsecured source.

    Raises:
        OpcUaSecurityError: A file is missing, unreadable, or does not hold what its setting needs.
    """
    if settings.security_policy == "None":
        return None
    assert settings.certificate is not None and settings.private_key is not None  # the settings check it
    where = _where(settings)
    certificate, key = _pair(where, ("Certificate", settings.certificate), ("PrivateKey", settings.private_key))
    uris = _application_uris(certificate)
    if not uris:
        raise OpcUaSecurityError(
            f"{where}: Certificate {settings.certificate!r} names no application URI; OPC UA needs one in its "
            "subjectAltName (e.g. URI:urn:pumpops:client), and servers refuse a certificate without it. Use "
            + CERTIFICATE_HELP
        )
    server = (
        _certificate(where, "ServerCertificate", settings.server_certificate)
        if settings.server_certificate is not None
        else None
    )
    return OpcUaSecurity(
        certificate=certificate.public_bytes(serialization.Encoding.DER),
        private_key=key.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        server_certificate=server.public_bytes(serialization.Encoding.DER) if server is not None else None,
        application_uri=uris[0],
    )


def load_user_identity(settings: OpcUaSourceSettings) -> UserIdentity | None:
    """The source's user certificate and key read from their files, or None when it signs in otherwise.

    Raises:
        OpcUaSecurityError: A file is missing, unreadable, not a certificate or RSA key, or the key is another's.
    """
    if settings.user_certificate is None or settings.user_private_key is None:
        return None
    certificate, key = _pair(
        _where(settings), ("UserCertificate", settings.user_certificate), ("UserPrivateKey", settings.user_private_key)
    )
    return UserIdentity(certificate=certificate, private_key=key)


def _where(settings: OpcUaSourceSettings) -> str:
    """How an error names the source whose files it is about."""
    return f"Telemetry.OpcUa source {settings.name!r}"


def _pair(where: str, certificate: tuple[str, str], key: tuple[str, str]) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
    """A certificate and its private key, each from the file a setting names (setting, path); the key must match."""
    cert = _certificate(where, *certificate)
    private = _private_key(where, *key, certificate_setting=certificate[0])
    if _spki(cert.public_key()) != _spki(private.public_key()):
        raise OpcUaSecurityError(
            f"{where}: {key[0]} {key[1]!r} is not the key of {certificate[0]} {certificate[1]!r}; "
            "give the key file the certificate was made with"
        )
    return cert, private


def _read(where: str, key: str, path: str, valid: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise OpcUaSecurityError(f"{where}: {key} file {path!r} does not exist; give {valid}") from None
    except OSError as exc:
        raise OpcUaSecurityError(
            f"{where}: {key} file {path!r} cannot be read ({exc.strerror or exc}); give {valid}"
        ) from None


def _certificate(where: str, key: str, path: str) -> x509.Certificate:
    content = _read(where, key, path, CERTIFICATE_HELP)
    try:
        if content.lstrip().startswith(b"-----BEGIN"):
            return x509.load_pem_x509_certificate(content)
        return x509.load_der_x509_certificate(content)
    except ValueError:
        raise OpcUaSecurityError(
            f"{where}: {key} file {path!r} is not a certificate; give {CERTIFICATE_HELP}"
        ) from None


def _private_key(where: str, setting: str, path: str, *, certificate_setting: str) -> rsa.RSAPrivateKey:
    valid = KEY_HELP.format(certificate=certificate_setting)
    content = _read(where, setting, path, valid)
    try:
        if content.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_private_key(content, password=None)
        else:
            key = serialization.load_der_private_key(content, password=None)
    except (ValueError, TypeError):  # TypeError: the key is encrypted
        raise OpcUaSecurityError(f"{where}: {setting} file {path!r} is not a private key; give {valid}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise OpcUaSecurityError(
            f"{where}: {setting} file {path!r} holds a {type(key).__name__}; the OPC UA security policies need RSA: "
            f"give {valid}"
        )
    return key


def _spki(key: Any) -> bytes:
    return bytes(key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))


def _application_uris(certificate: x509.Certificate) -> list[str]:
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(uri) for uri in names.get_values_for_type(x509.UniformResourceIdentifier)]


async def secure(client: Client, settings: OpcUaSourceSettings, security: OpcUaSecurity) -> None:
    """Set ``client`` up for the configured secured endpoint, before it connects.

    Asks the server for its endpoints (GetEndpoints, on an unsecured discovery channel), picks the one with the
    configured policy and mode, and checks the certificate it presents against the pinned `ServerCertificate`.

    Raises:
        SourceFailure: The server offers no such endpoint, or presents a certificate other than the pinned one.
    """
    endpoints = await client.connect_and_get_server_endpoints()
    endpoint = _matching(endpoints, settings)
    if endpoint is None:
        raise SourceFailure(no_endpoint(settings, endpoints))
    presented = uacrypto.x509_from_der(endpoint.ServerCertificate)
    if presented is None:
        raise SourceFailure("the server's endpoint presents no certificate; a secured endpoint must")
    der = presented.public_bytes(serialization.Encoding.DER)
    if security.server_certificate is not None and der != security.server_certificate:
        raise SourceFailure(
            f"the server presents a certificate ({presented.subject.rfc4514_string()}) other than ServerCertificate "
            f"{settings.server_certificate!r}; refused. Replace the file if the server's certificate was renewed"
        )
    client.application_uri = security.application_uri
    await client.set_security(
        POLICIES[settings.security_policy],
        certificate=CertProperties(security.certificate, extension="der"),
        private_key=CertProperties(security.private_key, extension="der"),
        server_certificate=CertProperties(der, extension="der"),
        mode=MODES[settings.security_mode],
    )


def no_endpoint(settings: OpcUaSourceSettings, endpoints: list[ua.EndpointDescription]) -> str:
    """Why a server cannot be read with the configured policy and mode, naming those it offers."""
    names = {uri: name for name, uri in ((n, p.URI) for n, p in POLICIES.items())}
    modes = {mode: name for name, mode in MODES.items()}
    offered = sorted(
        {
            f"{names.get(e.SecurityPolicyUri, e.SecurityPolicyUri)}/{modes.get(e.SecurityMode, str(e.SecurityMode))}"
            for e in endpoints
        }
    )
    return (
        f"the server offers no endpoint with SecurityPolicy {settings.security_policy} and SecurityMode "
        f"{settings.security_mode}; it offers {', '.join(offered) or 'none'} (SecurityPolicy/SecurityMode)"
    )


def _matching(endpoints: list[ua.EndpointDescription], settings: OpcUaSourceSettings) -> ua.EndpointDescription | None:
    policy = POLICIES[settings.security_policy].URI
    mode = MODES[settings.security_mode]
    for endpoint in endpoints:
        if endpoint.SecurityPolicyUri == policy and endpoint.SecurityMode == mode:
            return endpoint
    return None
