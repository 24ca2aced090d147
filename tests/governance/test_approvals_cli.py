"""`pumpops approvals` end to end: list, self-approval refused, approve once, reject, and hostile text or names."""

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.doors.cli.test_cli_tools import PUMPOPS, run_cli


def test_the_supervisor_commands_decide_parked_actions(tmp_path: Path) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Database": {"Path": "a.db"}, "Qdrant": {"Path": ":memory:"}}))
    order = ["work_orders.create_work_order", "pump_id=PUMP-004", "priority=high", "summary=Check the soft foot"]
    parked = json.loads(run_cli(settings, "tools", "call", *order, "--as", "alice", "--json").stdout)
    ack = ["alarms.acknowledge_alarm", "alarm_id=ALM-0002", "note=Crew on the way"]
    other = json.loads(run_cli(settings, "tools", "call", *ack, "--as", "alice", "--json").stdout)
    page = json.loads(run_cli(settings, "approvals", "list", "--status", "pending", "--json").stdout)
    assert {k: page[k] for k in ("total", "offset", "limit")} == {"total": 2, "offset": 0, "limit": 50}
    listed = page["approvals"]
    assert {a["id"] for a in listed} == {parked["approval_id"], other["approval_id"]}
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
    assert by_id[other["approval_id"]]["preconditions"] == [
        {"subject": "ALM-0002", "expects": "is active and not acknowledged"}
    ]
    refused = run_cli(settings, "approvals", "approve", parked["approval_id"], "--by", "alice")
    assert refused.returncode == 2 and "pumpops approvals approve" in refused.stderr
    done = run_cli(settings, "approvals", "approve", parked["approval_id"], "--by", "bob", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["result"]["work_order_id"] == "WO-0001"
    rejected = run_cli(settings, "approvals", "reject", other["approval_id"], "--by", "bob", "--reason", "not needed")
    assert rejected.returncode == 0 and "rejected" in rejected.stdout
    bad = run_cli(settings, "approvals", "list", "--status", "maybe")
    assert bad.returncode == 2 and "use one of pending" in bad.stderr
    assert run_cli(settings, "audit", "verify").returncode == 0


HOSTILE_SUMMARY = "Grease [/] bearings; [red]the[/red] seal :warning: \x1b[2K\u202eok"
SHOWN_SUMMARY = "Grease [/] bearings; [red]the[/red] seal :warning: \\u001b[2K\\u202eok"  # as JSON text, made visible
RAW_HIDDEN = ("\x1b", "\u202e")


def write_settings(folder: Path, **sections: object) -> Path:
    settings = folder / "appsettings.json"
    settings.write_text(json.dumps({"Database": {"Path": "a.db"}, "Qdrant": {"Path": ":memory:"}, **sections}))
    return settings


def park_order(settings: Path, summary: str, principal: str = "alice") -> str:
    order = ["work_orders.create_work_order", "pump_id=PUMP-004", "priority=high", f"summary={summary}"]
    parked = run_cli(settings, "tools", "call", *order, "--as", principal, "--json")
    assert parked.returncode == 0, parked.stderr
    return str(json.loads(parked.stdout)["approval_id"])


def test_a_hostile_summary_is_shown_exactly_as_stored_by_list_approve_and_audit_tail(tmp_path: Path) -> None:
    settings = write_settings(tmp_path)
    approval_id = park_order(settings, HOSTILE_SUMMARY)
    listed = run_cli(settings, "approvals", "list", "--status", "pending")
    approved = run_cli(settings, "approvals", "approve", approval_id, "--by", "bob")
    executed = run_cli(settings, "approvals", "list", "--status", "executed")
    tail = run_cli(settings, "audit", "tail")
    for shown in (listed, approved, executed, tail):
        assert shown.returncode == 0, shown.stderr  # `[/]` is text, not a closing tag that crashes rich
        assert SHOWN_SUMMARY in shown.stdout  # `[red]the[/red]` is not styled away; the escapes are visible
        assert not any(char in shown.stdout + shown.stderr for char in RAW_HIDDEN)
    assert "work_order_id" in approved.stdout and "WO-0001" in approved.stdout
    stored = json.loads(run_cli(settings, "approvals", "list", "--status", "executed", "--json").stdout)
    assert stored["approvals"][0]["arguments"]["summary"] == HOSTILE_SUMMARY  # JSON still carries the exact text


def test_a_principal_with_terminal_escapes_is_refused_at_every_door_and_shown_visibly(tmp_path: Path) -> None:
    settings = write_settings(tmp_path)
    hostile = "mallory\x1b[2Kbob"
    approval_id = park_order(settings, "Check the soft foot")
    refused = [
        run_cli(settings, "tools", "call", "assets.get_pump_details", "pump_id=PUMP-004", "--as", hostile),
        run_cli(settings, "approvals", "approve", approval_id, "--by", hostile),
        run_cli(settings, "approvals", "reject", approval_id, "--by", hostile, "--reason", "no"),
    ]
    for result in refused:
        assert result.returncode == 2, result.stdout + result.stderr
        assert "mallory\\x1b[2Kbob" in result.stderr and "\x1b" not in result.stdout + result.stderr
        assert "visible letters" in result.stderr and "'J. Supervisor'" in result.stderr
    tail = run_cli(settings, "audit", "tail")
    assert "mallory\\x1b[2Kbob" in tail.stdout and "\x1b" not in tail.stdout  # the refusals are audited, visibly
    with sqlite3.connect(settings.parent / "a.db") as db:
        assert db.execute("SELECT approval_id, status FROM approvals").fetchall() == [(approval_id, "pending")]


LOOK_ALIKES = {
    "zero-width space": "alice\u200b",
    "fullwidth letters": "\uff41\uff4c\uff49\uff43\uff45",
    "Cyrillic a": "\u0430lice",
    "soft hyphen": "alice\u00ad",
    "right-to-left override": "\u202ealice",
}


@pytest.fixture(scope="module")
def parked_by_alice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One action alice parked for each look-alike to try, so one case's outcome cannot mask another's."""
    settings = write_settings(tmp_path_factory.mktemp("look-alikes"))
    return settings, {name: park_order(settings, f"Check the soft foot ({case})") for case, name in LOOK_ALIKES.items()}


@pytest.mark.parametrize("approver", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_the_requester_cannot_approve_their_own_write_under_a_look_alike_name(
    parked_by_alice: tuple[Path, dict[str, str]], approver: str
) -> None:
    settings, parked = parked_by_alice
    approval_id = parked[approver]
    refused = run_cli(settings, "approvals", "approve", approval_id, "--by", approver)
    assert refused.returncode == 2, refused.stdout
    assert "cannot approve it" in refused.stderr or "--by 'J. Supervisor'" in refused.stderr
    assert not any(char in refused.stderr for char in "\u200b\u00ad\u202e")
    with sqlite3.connect(settings.parent / "a.db") as db:
        status = db.execute("SELECT status FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
        assert status == ("pending",)
        assert db.execute("SELECT COUNT(*) FROM work_orders").fetchone() == (0,)


PROCESSES = 4  # ten connections race in tests/governance/test_approvals.py; here the real CLI, in processes


def test_processes_approving_one_action_at_once_report_one_execution_and_honest_replays(
    tmp_path: Path,
) -> None:
    settings = write_settings(tmp_path)
    approval_id = park_order(settings, "Check the soft foot")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    command = [str(PUMPOPS), "--settings", str(settings), "approvals", "approve", approval_id, "--json", "--by"]
    processes = [
        subprocess.Popen(
            [*command, f"sup-{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
        )
        for i in range(PROCESSES)
    ]
    answers = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        answers.append(json.loads(out)[0])
    ran = [a for a in answers if a["outcome"] == "executed"]
    assert len(ran) == 1, [a["message"] for a in answers]
    winner = ran[0]
    with sqlite3.connect(tmp_path / "a.db") as db:
        executed_at = db.execute("SELECT executed_at FROM approvals").fetchone()[0]
        assert db.execute("SELECT COUNT(*), MAX(approved_by) FROM work_orders").fetchone() == (1, winner["decided_by"])
    honest = f"had already been executed by {winner['decided_by']} at {executed_at}; this approval ran nothing again"
    for answer in answers:
        assert answer["result"] == winner["result"] and answer["status"] == "executed"
        if answer is not winner:
            assert answer["outcome"] == "already_executed" and honest in answer["message"]


def test_a_stale_approval_is_refused_with_exit_2_and_listed_as_refused_with_what_it_assumed(tmp_path: Path) -> None:
    settings = write_settings(tmp_path)
    ack = ["alarms.acknowledge_alarm", "alarm_id=alm-2", "note=Crew on the way"]
    stale = json.loads(run_cli(settings, "tools", "call", *ack, "--as", "alice", "--json").stdout)["approval_id"]
    other = json.loads(run_cli(settings, "tools", "call", *ack, "--as", "carol", "--json").stdout)["approval_id"]
    assert run_cli(settings, "approvals", "approve", other, "--by", "bob").returncode == 0

    refused = run_cli(settings, "approvals", "approve", stale, "--by", "bob")

    assert refused.returncode == 2 and "ALM-0002 was acknowledged by bob at" in refused.stderr
    listed = run_cli(settings, "approvals", "list", "--status", "refused")
    assert listed.returncode == 0 and stale in listed.stdout and other not in listed.stdout
    assert "assumes: ALM-0002 is active and not acknowledged" in listed.stdout
    assert "refused at" in listed.stdout
    assert run_cli(settings, "audit", "verify").returncode == 0
