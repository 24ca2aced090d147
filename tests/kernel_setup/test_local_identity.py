"""The caller of a local door: the OS user, proven by the OS, with its roles; a typed name only as a label."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from governance.errors import PrincipalError
from governance.roles import Proof, Role, roles_for
from kernel_setup import load_settings
from kernel_setup.local_identity import local_caller, os_user, service_caller
from kernel_setup.settings import Settings


def settings_with(tmp_path: Path, **identity: object) -> Settings:
    path = tmp_path / "appsettings.json"
    path.write_text(json.dumps({"Qdrant": {"Path": ":memory:"}, "Identity": identity}))
    return load_settings(path, env={})


def test_the_principal_is_the_os_account_not_the_user_variables_a_caller_can_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "mallory")
    monkeypatch.setenv("LOGNAME", "mallory")
    caller = local_caller(settings_with(tmp_path), "cli")
    assert caller.principal == os_user() == pwd.getpwuid(os.geteuid()).pw_name != "mallory"
    assert (caller.proof, caller.door, caller.label) == (Proof.OS_USER, "cli", None)
    assert caller.roles == {Role.OPERATOR} and caller.has(Role.OPERATOR) and not caller.has(Role.SUPERVISOR)


def test_roles_come_from_identity_roles_for_the_os_user_named_exactly(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, Roles={os_user(): ["supervisor", "auditor"]})
    caller = local_caller(settings, "approvals")
    assert caller.roles == {Role.OPERATOR, Role.SUPERVISOR, Role.AUDITOR} and caller.has(Role.SUPERVISOR)


@pytest.mark.parametrize("name", ["ALICE", "Alice", "\uff41lice", "\u0430lice"])
def test_a_role_is_not_granted_to_a_name_that_only_looks_like_the_one_it_was_assigned_to(name: str) -> None:
    assignments = {"alice": [Role.SUPERVISOR]}
    assert roles_for(name, assignments, [Role.OPERATOR]) == {Role.OPERATOR}
    assert roles_for("alice", assignments, [Role.OPERATOR]) == {Role.OPERATOR, Role.SUPERVISOR}


def test_a_typed_name_is_refused_saying_how_to_allow_it_unless_it_names_the_os_user(tmp_path: Path) -> None:
    settings = settings_with(tmp_path)
    with pytest.raises(PrincipalError, match=r"Identity\.AllowAssertedNames to true") as refused:
        local_caller(settings, "cli", asserted="alice")
    assert "--as 'alice'" in str(refused.value) and os_user() in str(refused.value)
    with pytest.raises(PrincipalError, match="--by 'alice'"):
        local_caller(settings, "approvals", asserted="alice", option="--by")
    assert local_caller(settings, "cli", asserted=f" {os_user().upper()} ").label is None


def test_an_allowed_typed_name_is_a_label_that_changes_neither_principal_nor_roles(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, AllowAssertedNames=True, Roles={"alice": ["supervisor"]})
    caller = local_caller(settings, "chat", asserted="alice")
    assert (caller.principal, caller.label) == (os_user(), "alice")
    assert caller.audit_name == f"{os_user()} (asserted: alice)"
    assert not caller.has(Role.SUPERVISOR)  # alice's role is not the OS user's
    with pytest.raises(PrincipalError, match="hidden characters"):
        local_caller(settings, "chat", asserted="alice\u202e")


def test_automation_acts_as_a_service_whose_roles_never_count() -> None:
    caller = service_caller("automation:triage", "triage")
    assert caller.proof is Proof.SERVICE and not caller.proof.proven
    assert not any(caller.has(role) for role in Role)
