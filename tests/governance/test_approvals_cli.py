"""`pumpops approvals` end to end: the OS user decides with its roles, four eyes, approve once, reject, hostile text.

The CLI runs as the real OS user; these tests give it roles in the settings file they write, and park the
actions it decides as another proven principal (alice), in process.
"""

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from semantic_kernel.functions import KernelArguments

from governance.identity import acting_as
from governance.roles import Role
from kernel_setup import load_settings, open_app
from kernel_setup.local_identity import os_user
from tests.callers import person
from tests.doors.cli.test_cli_tools import PUMPOPS, run_cli
from tests.postgres_server import database_section, query

ORDER = {"pump_id": "PUMP-004", "priority": "high", "summary": "Check the soft foot"}
ACK = {"alarm_id": "ALM-0002", "note": "Crew on the way"}


def write_settings(folder: Path, *roles: str, database: str | Path, **sections: object) -> Path:
    """A settings file on ``database`` (the `database_target` fixture) giving the OS user ``roles`` (none: the
    default operator only)."""
    settings = folder / "appsettings.json"
    identity = {"Roles": {os_user(): list(roles)}, **sections.pop("Identity", {})}  # type: ignore[dict-item]
    data = {
        "Database": database_section(database, "a.db"),
        "Qdrant": {"Path": ":memory:"},
        "Identity": identity,
        **sections,
    }
    settings.write_text(json.dumps(data))
    return settings


def park(settings: Path, function: str = "work_orders.create_work_order", principal: str = "alice", **args: Any) -> str:
    """Park a write as ``principal``, proven as an OS user other than the one the CLI runs as; its approval id."""

    async def propose() -> str:
        async with open_app(load_settings(settings, env={})) as app:
            with acting_as(person(principal, Role.OPERATOR, door="test")):
                plugin, name = function.split(".")
                result = await app.kernel.invoke(app.kernel.get_function(plugin, name), KernelArguments(**args))
        assert result is not None
        return str(json.loads(str(result.value))["approval_id"])

    return asyncio.run(propose())


def park_order(settings: Path, summary: str = "Check the soft foot") -> str:
    return park(settings, **{**ORDER, "summary": summary})


def test_the_os_user_with_the_supervisor_role_decides_another_principals_proposals(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, "supervisor", database=database_target)
    parked = park_order(settings)
    other = park(settings, "alarms.acknowledge_alarm", **ACK)
    page = json.loads(run_cli(settings, "approvals", "list", "--status", "pending", "--json").stdout)
    assert {k: page[k] for k in ("total", "offset", "limit")} == {"total": 2, "offset": 0, "limit": 50}
    listed = page["approvals"]
    assert {a["id"] for a in listed} == {parked, other}
    assert {a["requested_by"] for a in listed} == {"alice"}
    assert set(listed[0]) == {
        "id",
        "function",
        "arguments",
        "status",
        "requested_by",
        "requested_at",
        "expires_at",
        "decided_by",
        "decided_at",
        "reason",
        "result",
        "preconditions",
        "refused_at",
    }
    by_id = {a["id"]: a for a in listed}
    assert by_id[other]["preconditions"] == [{"subject": "ALM-0002", "expects": "is active and not acknowledged"}]
    done = run_cli(settings, "approvals", "approve", parked, "--json")
    assert done.returncode == 0, done.stderr
    decided = json.loads(done.stdout)[0]
    assert decided["result"]["work_order_id"] == "WO-0001" and decided["decided_by"] == os_user()
    rejected = run_cli(settings, "approvals", "reject", other, "--reason", "not needed")
    assert rejected.returncode == 0 and "rejected" in rejected.stdout
    bad = run_cli(settings, "approvals", "list", "--status", "maybe")
    assert bad.returncode == 2 and "use one of pending" in bad.stderr
    assert run_cli(settings, "audit", "verify").returncode == 0


def test_the_os_user_cannot_approve_what_it_proposed_even_under_another_label(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, "supervisor", Identity={"AllowAssertedNames": True}, database=database_target)
    order = ["work_orders.create_work_order", *(f"{k}={v}" for k, v in ORDER.items()), "--json"]
    mine = run_cli(settings, "tools", "call", *order, "--as", "alice")
    approval_id = json.loads(mine.stdout)["approval_id"]
    refused = run_cli(settings, "approvals", "approve", approval_id, "--by", "J. Supervisor")
    assert refused.returncode == 2, refused.stdout
    assert "cannot approve it" in refused.stderr and "pumpops approvals approve" in refused.stderr
    assert query(settings, "SELECT requested_by, status FROM approvals") == [
        {"requested_by": os_user(), "status": "pending"}
    ]
    [row] = query(settings, "SELECT principal, outcome FROM audit_log WHERE function = 'approvals-approve'")
    assert row == {
        "principal": f"{os_user()} (asserted: J. Supervisor)",
        "outcome": "denied",
    }  # a label never changes who decides


def test_the_approval_cli_refuses_an_os_user_without_the_supervisor_role_saying_how_to_grant_it(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    settings = write_settings(tmp_path, "auditor", database=database_target)
    approval_id = park_order(settings)
    for command in (["approve", approval_id], ["reject", approval_id, "--reason", "no"]):
        refused = run_cli(settings, "approvals", *command)
        assert refused.returncode == 2, refused.stdout
        assert "needs the supervisor role" in refused.stderr and "Identity.Roles" in refused.stderr
    assert query(settings, "SELECT status FROM approvals") == [{"status": "pending"}]
    rows = query(settings, "SELECT function, outcome FROM audit_log WHERE door = 'approvals' ORDER BY id")
    assert [(r["function"], r["outcome"]) for r in rows] == [
        ("approvals-approve", "denied"),
        ("approvals-reject", "denied"),
    ]


HOSTILE_SUMMARY = "Grease [/] bearings; [red]the[/red] seal :warning: \x1b[2K\u202eok"
SHOWN_SUMMARY = "Grease [/] bearings; [red]the[/red] seal :warning: \\u001b[2K\\u202eok"  # as JSON text, made visible
RAW_HIDDEN = ("\x1b", "\u202e")


def test_a_hostile_summary_is_shown_exactly_as_stored_by_list_approve_and_audit_tail(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, "supervisor", database=database_target)
    approval_id = park_order(settings, HOSTILE_SUMMARY)
    listed = run_cli(settings, "approvals", "list", "--status", "pending")
    approved = run_cli(settings, "approvals", "approve", approval_id)
    executed = run_cli(settings, "approvals", "list", "--status", "executed")
    tail = run_cli(settings, "audit", "tail")
    for shown in (listed, approved, executed, tail):
        assert shown.returncode == 0, shown.stderr  # `[/]` is text, not a closing tag that crashes rich
        assert SHOWN_SUMMARY in shown.stdout  # `[red]the[/red]` is not styled away; the escapes are visible
        assert not any(char in shown.stdout + shown.stderr for char in RAW_HIDDEN)
    assert "work_order_id" in approved.stdout and "WO-0001" in approved.stdout
    stored = json.loads(run_cli(settings, "approvals", "list", "--status", "executed", "--json").stdout)
    assert stored["approvals"][0]["arguments"]["summary"] == HOSTILE_SUMMARY  # JSON still carries the exact text


def test_a_name_with_terminal_escapes_is_refused_at_every_door_and_shown_visibly(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, "supervisor", Identity={"AllowAssertedNames": True}, database=database_target)
    hostile = "mallory\x1b[2Kbob"
    approval_id = park_order(settings)
    refused = [
        run_cli(settings, "tools", "call", "assets.get_pump_details", "pump_id=PUMP-004", "--as", hostile),
        run_cli(settings, "approvals", "approve", approval_id, "--by", hostile),
        run_cli(settings, "approvals", "reject", approval_id, "--by", hostile, "--reason", "no"),
    ]
    for result in refused:
        assert result.returncode == 2, result.stdout + result.stderr
        assert "mallory\\x1b[2Kbob" in result.stderr and "\x1b" not in result.stdout + result.stderr
        assert "visible letters" in result.stderr and "'J. Supervisor'" in result.stderr
    assert query(settings, "SELECT approval_id, status FROM approvals") == [
        {"approval_id": approval_id, "status": "pending"}
    ]


PROCESSES = 4  # ten connections race in tests/governance/test_approvals.py; here the real CLI, in processes


def test_processes_approving_one_action_at_once_report_one_execution_and_honest_replays(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    settings = write_settings(tmp_path, "supervisor", database=database_target)
    approval_id = park_order(settings)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    command = [str(PUMPOPS), "--settings", str(settings), "approvals", "approve", approval_id, "--json"]
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        for _ in range(PROCESSES)
    ]
    answers = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        answers.append(json.loads(out)[0])
    ran = [a for a in answers if a["outcome"] == "executed"]
    assert len(ran) == 1, [a["message"] for a in answers]
    winner = ran[0]
    [approval] = query(settings, "SELECT executed_at FROM approvals")
    executed_at = approval["executed_at"]
    [orders] = query(settings, "SELECT COUNT(*) AS n, MAX(approved_by) AS approved_by FROM work_orders")
    assert (orders["n"], orders["approved_by"]) == (1, winner["decided_by"])
    honest = f"had already been executed by {winner['decided_by']} at {executed_at}; this approval ran nothing again"
    for answer in answers:
        assert answer["result"] == winner["result"] and answer["status"] == "executed"
        if answer is not winner:
            assert answer["outcome"] == "already_executed" and honest in answer["message"]


def test_a_stale_approval_is_refused_with_exit_2_and_listed_as_refused_with_what_it_assumed(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, "supervisor", database=database_target)
    stale = park(settings, "alarms.acknowledge_alarm", **{**ACK, "alarm_id": "alm-2"})
    other = park(settings, "alarms.acknowledge_alarm", principal="carol", **ACK)
    assert run_cli(settings, "approvals", "approve", other).returncode == 0

    refused = run_cli(settings, "approvals", "approve", stale)

    assert refused.returncode == 2 and f"ALM-0002 was acknowledged by {os_user()} at" in refused.stderr
    listed = run_cli(settings, "approvals", "list", "--status", "refused")
    assert listed.returncode == 0 and stale in listed.stdout and other not in listed.stdout
    assert "assumes: ALM-0002 is active and not acknowledged" in listed.stdout
    assert "refused at" in listed.stdout
    assert run_cli(settings, "audit", "verify").returncode == 0
