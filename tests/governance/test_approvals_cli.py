"""`pumpops approvals` end to end: list, self-approval refused, approve once, reject with a reason."""

import json
from pathlib import Path

from tests.doors.cli.test_cli_tools import run_cli


def test_the_supervisor_commands_decide_parked_actions(tmp_path: Path) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Database": {"Path": "a.db"}, "Qdrant": {"Path": ":memory:"}}))
    order = ["work_orders.create_work_order", "pump_id=PUMP-004", "priority=high", "summary=Check the soft foot"]
    parked = json.loads(run_cli(settings, "tools", "call", *order, "--as", "alice", "--json").stdout)
    ack = ["alarms.acknowledge_alarm", "alarm_id=ALM-0002", "note=Crew on the way"]
    other = json.loads(run_cli(settings, "tools", "call", *ack, "--as", "alice", "--json").stdout)
    listed = json.loads(run_cli(settings, "approvals", "list", "--status", "pending", "--json").stdout)
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
        "result",
    }
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
