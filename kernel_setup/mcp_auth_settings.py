"""The `Mcp.Auth` settings subsection: how the HTTP MCP door proves who is calling.

Two kinds of bearer token are accepted: static API tokens from ``TokensFile`` (managed by `pumpops tokens`)
and, when ``Issuer`` is set, OAuth 2.1 JWT access tokens signed by a key of ``JwksUrl`` whose audience is
this server's ``ResourceUri``. ``Issuer`` and ``JwksUrl`` are https, or http on a loopback host only. Once
either is configured (the tokens file exists, or ``Issuer`` is set), every HTTP request needs a valid token,
whatever address the server listens on.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, field_validator

from kernel_setup.settings_sections import Section as _Section
from kernel_setup.settings_sections import alias as _alias
from kernel_setup.settings_sections import comma_separated

_ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Signature algorithms a JWKS can publish a public key for; symmetric (HS*) and ``none`` are never accepted."""
_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
"""Hosts whose ``Issuer`` and ``JwksUrl`` may be plain http: the traffic never leaves this machine."""


class McpAuthSettings(_Section):
    """Bearer tokens for `pumpops mcp --http`: a tokens file and an optional OAuth issuer."""

    model_config = ConfigDict(alias_generator=_alias)
    tokens_file: str = "data/mcp-tokens.json"
    """Static API tokens (hashed), relative to the settings file's folder."""
    issuer: str | None = None
    """The OAuth authorization server whose JWT access tokens are accepted (its ``iss``), e.g. ``https://login.example.com``."""
    jwks_url: str | None = None
    """Where the issuer publishes its signing keys; default ``<Issuer>/.well-known/jwks.json``."""
    resource_uri: str | None = None
    """This server's resource URI, the audience a JWT must carry (RFC 8707); default ``http://HOST:PORT/mcp``."""
    algorithms: tuple[str, ...] = ("RS256",)
    jwks_cache_seconds: float = Field(default=300.0, ge=0.0)
    principal_claim: str = "sub"
    role_claim: str | None = "roles"
    """Claim listing the subject's PumpOps roles (a list, or a space-separated string as ``scope`` is); null: none."""
    scopes: tuple[str, ...] = ()
    """Scopes published as ``scopes_supported`` in the protected resource metadata (informational)."""

    @field_validator("algorithms", "scopes", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        return comma_separated(value)

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError(f"list at least one algorithm, e.g. ['RS256']; accepted: {', '.join(_ASYMMETRIC)}")
        for entry in value:
            if entry not in _ASYMMETRIC:
                raise ValueError(
                    f"{entry!r} is not an accepted JWT algorithm; use public-key algorithms only: "
                    + ", ".join(_ASYMMETRIC)
                )
        return value

    @field_validator("issuer", "jwks_url", "resource_uri")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError(f"{value!r} is not an http(s) URL; write it in full, e.g. 'https://login.example.com'")
        return value

    @field_validator("issuer", "jwks_url")
    @classmethod
    def _https_unless_loopback(cls, value: str | None) -> str | None:
        # Signing keys fetched over plain HTTP can be swapped by anyone on the path, and then any token verifies.
        if value is not None and value.startswith("http://") and urlsplit(value).hostname not in _LOOPBACK:
            raise ValueError(
                f"{value!r} uses plain http; the issuer and its JWKS must be https (e.g. 'https://login.example.com'), "
                "except on this machine (127.0.0.1, ::1 or localhost)"
            )
        return value

    def jwks(self) -> str | None:
        """The JWKS URL in force: ``JwksUrl``, else derived from ``Issuer``; None without an issuer."""
        if self.issuer is None:
            return None
        return self.jwks_url or self.issuer.rstrip("/") + "/.well-known/jwks.json"
