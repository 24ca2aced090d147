"""`Approval.Policy` cannot weaken the approval gate silently (issue #27, finding 4).

A name the kernel does not have is a settings error listing the valid names, and every start whose
policy lets a write run without approval says so on stderr and in the audit trail.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from kernel_setup import load_settings, open_app
from kernel_setup.app import POLICY_AUDIT_FUNCTION
from kernel_setup.errors import SettingsError
from kernel_setup.local_identity import os_user
from tests.cli_process import run_pumpops
from tests.governance.test_approvals import ORDER, propose, settings_for
from tests.postgres_server import database_section

ALLOW_WRITE = {"work_orders": {"create_work_order": "allow"}}


@pytest.mark.parametrize(
    ("policy", "fragment", "valid"),
    [
        (
            {"workorders": {"create_work_order": "allow"}},
            "Approval.Policy.workorders: unknown plugin",
            "Plugins: alarms, assets, docs, sensors, work_orders.",
        ),
        (
            {"work_orders": {"create_work_ordr": "deny"}},
            "Approval.Policy.work_orders.create_work_ordr: unknown function",
            "Functions of work_orders: create_work_order, get_approval_status, list_work_orders.",
        ),
    ],
    ids=["plugin", "function"],
)
async def test_a_misspelled_policy_target_is_a_settings_error_listing_the_valid_names(
    tmp_path: Path, database_target: str | Path, policy: dict[str, Any], fragment: str, valid: str
) -> None:
    settings = settings_for(tmp_path, Policy=policy, database=database_target)
    with pytest.raises(SettingsError) as caught:
        async with open_app(settings, warn=pytest.fail):
            pytest.fail("the app started with a policy naming what the kernel lacks")
    message = str(caught.value)
    assert fragment in message and valid in message and str(tmp_path / "appsettings.json") in message


async def test_every_start_with_a_write_allowed_warns_once_per_write_and_audits_it(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, Policy=ALLOW_WRITE, database=database_target)
    warnings: list[str] = []
    for _ in range(2):
        async with open_app(settings, warn=warnings.append):
            pass

    source = str(tmp_path / "appsettings.json")
    assert len(warnings) == 2 and warnings[0] == warnings[1]
    assert warnings[0].startswith(f"warning: Approval.Policy in {source} allows work_orders-create_work_order ")
    async with open_app(settings, warn=warnings.append) as app:
        rows = await app.db.fetch_all("SELECT * FROM audit_log ORDER BY id")
        assert [(r["function"], r["principal"], r["door"], r["outcome"]) for r in rows] == [
            (POLICY_AUDIT_FUNCTION, "pumpops", "startup", "ok")
        ] * 3
        assert json.loads(rows[0]["arguments"]) == {"allow": ["work_orders-create_work_order"], "settings": source}
        assert "allowing unapproved writes: work_orders-create_work_order" in rows[0]["detail"]
        assert await app.audit.verify() is None


async def test_a_write_run_by_policy_is_recorded_after_the_start_row_and_the_chain_verifies(
    tmp_path: Path, database_target: str | Path
) -> None:
    async with open_app(
        settings_for(tmp_path, Policy=ALLOW_WRITE, database=database_target), warn=lambda _: None
    ) as app:
        result = await propose(app, **ORDER)
        assert result["status"] == "executed"
        rows = await app.db.fetch_all("SELECT function, outcome FROM audit_log ORDER BY id")
        assert [(r["function"], r["outcome"]) for r in rows] == [
            (POLICY_AUDIT_FUNCTION, "ok"),
            ("work_orders-create_work_order", "ok"),
        ]
        assert await app.audit.verify() is None


@pytest.mark.parametrize(
    "policy",
    [{}, {"assets": {"get_system_summary": "allow"}}, {"work_orders": {"create_work_order": "deny"}}],
    ids=["default", "read allowed", "write denied"],
)
async def test_a_policy_that_weakens_no_write_starts_silently(
    tmp_path: Path, database_target: str | Path, policy: dict[str, Any]
) -> None:
    async with open_app(settings_for(tmp_path, Policy=policy, database=database_target), warn=pytest.fail) as app:
        assert await app.db.fetch_all("SELECT id FROM audit_log") == []


def test_the_cli_warns_on_stderr_at_start_and_audit_verify_stays_green(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(
        json.dumps(
            {
                "Database": database_section(database_target, "p.db"),
                "Qdrant": {"Path": ":memory:"},
                "Approval": {"Policy": ALLOW_WRITE},
                "Identity": {"Roles": {os_user(): ["auditor"]}},
            }
        )
    )
    load_settings(settings, env={})  # the file itself is valid

    listed = run_pumpops(settings, "tools", "list", "--json")

    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)  # stdout stays machine-readable
    lines = listed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: Approval.Policy in {settings} allows ")
    assert "work_orders-create_work_order" in lines[0]
    verify = run_pumpops(settings, "audit", "verify")
    assert verify.returncode == 0 and "Audit chain intact: 1 rows" in verify.stdout, verify.stderr


def test_the_cli_refuses_a_misspelled_policy_target_with_exit_2(tmp_path: Path, database_target: str | Path) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(
        json.dumps(
            {
                "Database": database_section(database_target, "p.db"),
                "Qdrant": {"Path": ":memory:"},
                "Approval": {"Policy": {"work_orders": {"create_work_ordr": "allow"}}},
            }
        )
    )
    result = run_pumpops(settings, "tools", "list")
    assert result.returncode == 2
    assert "Approval.Policy.work_orders.create_work_ordr: unknown function" in result.stderr
    assert "create_work_order" in result.stderr and "Traceback" not in result.stderr
