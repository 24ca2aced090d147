"""The Mcp.Auth settings: an issuer and its signing keys are reached over https, plain http only on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_setup import load_settings
from kernel_setup.errors import SettingsError
from kernel_setup.mcp_auth_settings import McpAuthSettings


def load(tmp_path: Path, auth: dict[str, str]) -> McpAuthSettings:
    path = tmp_path / "appsettings.json"
    path.write_text(json.dumps({"Mcp": {"Auth": auth}}))
    return load_settings(path, env={}).mcp.auth


@pytest.mark.parametrize(
    ("key", "url"),
    [
        ("Issuer", "http://login.example.com"),
        ("JwksUrl", "http://login.example.com/.well-known/jwks.json"),
        ("Issuer", "http://127.0.0.1.evil.example.com"),
    ],
)
def test_a_plain_http_issuer_or_jwks_url_off_this_machine_is_refused_naming_the_key_and_https(
    tmp_path: Path, key: str, url: str
) -> None:
    auth = {"Issuer": "https://login.example.com", key: url}
    with pytest.raises(SettingsError, match=rf"Mcp\.Auth\.{key}") as refused:
        load(tmp_path, auth)
    assert "must be https" in str(refused.value) and "localhost" in str(refused.value)


@pytest.mark.parametrize("host", ["127.0.0.1:8443", "[::1]:9000", "localhost"])
def test_a_plain_http_issuer_and_jwks_url_on_a_loopback_host_are_accepted(tmp_path: Path, host: str) -> None:
    auth = load(tmp_path, {"Issuer": f"http://{host}", "JwksUrl": f"http://{host}/jwks.json"})
    assert auth.jwks() == f"http://{host}/jwks.json"
