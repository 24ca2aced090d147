"""Static API tokens: the secret shown once and never stored, the file private, revocation kept on record."""

from __future__ import annotations

import json
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from governance import PrincipalError
from governance.api_tokens import TOKEN_PREFIX, TokenFile, TokenFileError, token_hash
from governance.roles import Role
from tests.cli_process import run_pumpops


def test_a_created_token_is_stored_only_as_its_hash_in_a_file_only_its_owner_can_read(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "data" / "tokens.json")
    entry, secret = tokens.create("ci-bot", [Role.OPERATOR])
    text = tokens.path.read_text(encoding="utf-8")

    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 40
    assert secret not in text and token_hash(secret) in text
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    assert tokens.find(secret) == entry and tokens.find(secret + "x") is None
    # no temporary file left behind; only the sidecar lock file beside the tokens file
    assert sorted(p.name for p in tokens.path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_a_name_is_refused_while_an_active_token_holds_it_and_free_again_once_revoked(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    tokens.create("ci-bot", [Role.OPERATOR])
    with pytest.raises(TokenFileError, match="already named 'ci-bot'"):
        tokens.create("CI-BOT", [Role.SUPERVISOR])  # names compare as principals do
    revoked = tokens.revoke("ci-bot")
    _, secret = tokens.create("ci-bot", [Role.SUPERVISOR])

    assert revoked.revoked_at is not None and not revoked.active
    assert [(e.name, e.active) for e in tokens.read()] == [("ci-bot", False), ("ci-bot", True)]
    found = tokens.find(secret)
    assert found is not None and found.roles == (Role.SUPERVISOR,)


def test_revoking_an_unknown_name_and_creating_a_hidden_character_name_are_refused_saying_what_is_valid(
    tmp_path: Path,
) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    tokens.create("ci-bot", [])
    with pytest.raises(TokenFileError, match="Active tokens: ci-bot"):
        tokens.revoke("nobody")
    with pytest.raises(PrincipalError, match="hidden characters"):
        tokens.create("eve\u202e", [Role.OPERATOR])


def test_a_hand_edited_file_is_refused_with_how_to_create_tokens_instead(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"version": 1, "tokens": [{"name": "x", "roles": ["root"]}]}))
    with pytest.raises(TokenFileError, match="pumpops tokens create NAME --role ROLE"):
        TokenFile(path).read()


def test_the_tokens_commands_print_the_secret_once_and_list_without_it(tmp_path: Path) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Mcp": {"Auth": {"TokensFile": "secrets/tokens.json"}}}))
    created = run_pumpops(settings, "tokens", "create", "sam", "--role", "supervisor")
    listed = run_pumpops(settings, "tokens", "list", "--json")
    revoked = run_pumpops(settings, "tokens", "revoke", "sam")
    again = run_pumpops(settings, "tokens", "revoke", "sam")

    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith(TOKEN_PREFIX) and "shown once" in created.stderr
    assert listed.returncode == 0 and secret not in listed.stdout
    assert json.loads(listed.stdout) == [
        {
            "name": "sam",
            "roles": ["supervisor"],
            "created_at": json.loads(listed.stdout)[0]["created_at"],
            "revoked_at": None,
        }
    ]
    assert revoked.returncode == 0 and "Revoked sam" in revoked.stdout
    assert again.returncode == 2 and "No active token is named 'sam'" in again.stderr
    assert (tmp_path / "secrets" / "tokens.json").is_file()


def test_creates_and_revokes_racing_in_threads_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    TokenFile(path).create("victim", [Role.OPERATOR])
    workers = 8
    start = threading.Barrier(workers + 1, timeout=30)

    def create(index: int) -> None:
        start.wait()
        for round_ in range(5):
            TokenFile(path).create(f"bot-{index}-{round_}", [Role.OPERATOR])

    def revoke() -> None:
        start.wait()
        TokenFile(path).revoke("victim")

    with ThreadPoolExecutor(max_workers=workers + 1) as pool:
        futures = [pool.submit(create, index) for index in range(workers)] + [pool.submit(revoke)]
        for future in futures:
            future.result(timeout=60)
    entries = {entry.name: entry for entry in TokenFile(path).read()}

    assert len(entries) == 1 + workers * 5  # every create kept
    assert not entries["victim"].active  # and the revoke not undone by a create that read before it
