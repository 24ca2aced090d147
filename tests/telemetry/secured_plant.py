"""A secured asyncua server on 127.0.0.1 for the OPC UA security tests, and the certificates both sides use.

The server offers only Basic256Sha256 with SignAndEncrypt (no unsecured endpoint) and, given a trust folder,
admits only clients whose certificate is in it (asyncua's `CertificateValidator` with a `TrustStore`).
Certificates are self-signed RSA application certificates made by asyncua's `cert_gen`, as OPC UA wants them:
the application URI in the subjectAltName, the key usages, and clientAuth or serverAuth.
"""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from asyncua import Server, ua
from asyncua.crypto import cert_gen
from asyncua.crypto.truststore import TrustStore
from asyncua.crypto.validator import CertificateValidator, CertificateValidatorOptions
from asyncua.server.user_managers import CertificateUserManager, UserManager
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from tests.telemetry.plant_servers import free_port


@dataclass(frozen=True)
class AppCertificate:
    """A certificate and its private key as PEM files, and the application URI the certificate names."""

    certificate: Path
    private_key: Path
    uri: str


def app_certificate(folder: Path, name: str, *, server: bool = False) -> AppCertificate:
    """A self-signed OPC UA application certificate for ``urn:pumpops:test:<name>`` on 127.0.0.1."""
    uri = f"urn:pumpops:test:{name}"
    key = cert_gen.generate_private_key()
    certificate = cert_gen.generate_self_signed_app_certificate(
        key,
        name,
        {},
        [x509.UniformResourceIdentifier(uri), x509.DNSName(socket.gethostname()), x509.DNSName("localhost")],
        [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH],
        days=1,
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / f"{name}.pem", folder / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(cert_gen.dump_private_key_as_pem(key))
    return AppCertificate(cert_file, key_file, uri)


class SecuredPlant:
    """An asyncua server offering only Basic256Sha256 + SignAndEncrypt, serving ``ns=2;s=<name>`` Doubles."""

    def __init__(
        self,
        folder: Path,
        names: list[str],
        *,
        trusted: list[AppCertificate] | None = None,
        users: CertificateUserManager | None = None,
    ) -> None:
        """``users``: admit only sessions signed in with a user certificate it knows (no anonymous sessions)."""
        self.port = free_port()
        self.endpoint = f"opc.tcp://127.0.0.1:{self.port}/pumpops/"
        self.certificate = app_certificate(folder / "server", "plant", server=True)
        self._folder = folder
        self._names = names
        self._trusted = trusted
        self._users = users
        # asyncua's CertificateUserManager has the UserManager interface without subclassing it.
        self.server = Server(user_manager=cast("UserManager | None", users))
        self.nodes: dict[str, tuple[str, object]] = {}

    async def __aenter__(self) -> SecuredPlant:
        server = self.server
        await server.init()
        server.set_endpoint(self.endpoint)
        await server.set_application_uri(self.certificate.uri)
        server.set_security_policy([ua.SecurityPolicyType.Basic256Sha256_SignAndEncrypt])
        if self._users is not None:
            server.set_identity_tokens([ua.X509IdentityToken])
        await server.load_certificate(str(self.certificate.certificate))
        await server.load_private_key(str(self.certificate.private_key), format="pem")
        if self._trusted is not None:
            trust = self._folder / "trusted"
            trust.mkdir(parents=True, exist_ok=True)
            for app in self._trusted:
                shutil.copy(app.certificate, trust / app.certificate.name)
            store = TrustStore([trust], [])
            await store.load()
            options = CertificateValidatorOptions.TRUSTED_VALIDATION | CertificateValidatorOptions.PEER_CLIENT
            server.set_certificate_validator(CertificateValidator(options, store).validate)
        namespace = await server.register_namespace("urn:pumpops:test-secured-plant")
        for name in self._names:
            node_id = f"ns={namespace};s={name}"
            node = await server.nodes.objects.add_variable(node_id, name, 0.0, varianttype=ua.VariantType.Double)
            self.nodes[name] = (node_id, node)
        await server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()
