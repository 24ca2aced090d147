"""`pumpops audit` reads the trail only for an OS user holding the auditor or supervisor role."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_setup.local_identity import os_user
from tests.cli_process import run_pumpops
from tests.postgres_server import database_section, query


def test_the_audit_commands_refuse_an_os_user_without_the_auditor_role_and_audit_the_refusal(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(
        json.dumps({"Database": database_section(database_target, "audit.db"), "Qdrant": {"Path": ":memory:"}})
    )
    assert run_pumpops(settings, "db", "init").returncode == 0

    refused = run_pumpops(settings, "audit", "tail")

    assert refused.returncode == 2 and refused.stdout == ""
    assert "needs the auditor or supervisor role" in refused.stderr and "Identity.Roles" in refused.stderr
    rows = query(settings, "SELECT principal, function, outcome FROM audit_log WHERE door = 'cli'")
    assert rows == [{"principal": os_user(), "function": "audit-tail", "outcome": "denied"}]
    granted = {"PUMPOPS_Identity__Roles": json.dumps({os_user(): ["auditor"]})}
    verify = run_pumpops(settings, "audit", "verify", env=granted)
    assert verify.returncode == 0 and "Audit chain intact" in verify.stdout, verify.stderr
