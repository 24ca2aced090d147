"""Edge cases found in review: one intent never runs twice, expiry holds after approval, every refusal is audited."""

import json
from pathlib import Path
from typing import Any

import pytest
from semantic_kernel.functions import KernelArguments

from governance import ApprovalError
from governance.errors import RoleError
from governance.identity import CallContext, acting_as
from governance.roles import Proof, Role
from kernel_setup import AppContext, load_settings, open_app
from tests.callers import person, supervisor
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.governance.test_approvals import ORDER, count, propose, settings_for
from turn.factory import runner_for


async def test_the_same_intent_approved_twice_under_two_approvals_writes_once(app: AppContext) -> None:
    first = await propose(app)
    await app.approval_store.claim(first["approval_id"], "bob", allow_self_approval=False)
    again = await propose(app)  # the intent is approved but not run yet: the same approval comes back
    assert again["approval_id"] == first["approval_id"]
    async with app.db.transaction() as conn:  # force a second approval of the same intent, as after a race
        await conn.execute(
            "INSERT INTO approvals SELECT 'APR-DUPL1CAT', function, arguments, args_hash, intent_key, 'pending', "
            "requested_by, session, requested_at, expires_at, NULL, NULL, NULL, NULL, NULL, preconditions, NULL "
            "FROM approvals"
        )
    await app.approvals.approve(first["approval_id"], supervisor("bob"))
    second = await app.approvals.approve("APR-DUPL1CAT", supervisor("carol"))
    assert second.status.value == "executed" and second.result["work_order_id"] == "WO-0001"
    assert await count(app, "wo") == 1


async def test_an_approved_action_that_expired_before_running_cannot_run(app: AppContext) -> None:
    parked = await propose(app)
    await app.approval_store.claim(parked["approval_id"], "bob", allow_self_approval=False)
    async with app.db.transaction() as conn:
        await conn.execute("UPDATE approvals SET expires_at = '2000-01-01T00:00:00+00:00'")
    with pytest.raises(ApprovalError, match="expired"):
        await app.approvals.approve(parked["approval_id"], supervisor("mallory"))
    assert await count(app, "wo") == 0


async def test_an_approved_but_unexecuted_action_can_still_be_rejected(app: AppContext) -> None:
    parked = await propose(app)
    await app.approval_store.claim(parked["approval_id"], "bob", allow_self_approval=False)
    rejected = await app.approvals.reject(parked["approval_id"], supervisor("carol"), reason="changed our mind")
    assert rejected.status.value == "rejected"
    with pytest.raises(ApprovalError):
        await app.approvals.approve(parked["approval_id"], supervisor("bob"))
    assert await count(app, "wo") == 0


@pytest.mark.parametrize("approver", ["alice ", " Alice", "ALICE"])
async def test_self_approval_cannot_be_dodged_by_case_or_spaces(app: AppContext, approver: str) -> None:
    parked = await propose(app, principal="alice")
    with pytest.raises(ApprovalError, match="cannot approve it"):
        await app.approvals.approve(parked["approval_id"], supervisor(approver))
    assert await count(app, "wo") == 0


@pytest.mark.parametrize(
    "who",
    [
        person("bob", Role.OPERATOR),
        person("bob", Role.AUDITOR),
        CallContext(principal="bob", door="approvals", proof=Proof.NONE, roles=frozenset({Role.SUPERVISOR})),
        CallContext(principal="bob", door="approvals", proof=Proof.SERVICE, roles=frozenset({Role.SUPERVISOR})),
    ],
    ids=["operator", "auditor", "unproven supervisor", "service"],
)
async def test_a_principal_without_a_proven_supervisor_role_cannot_approve_or_reject_and_is_audited_denied(
    app: AppContext, who: CallContext
) -> None:
    parked = await propose(app)
    with pytest.raises(RoleError, match="needs the supervisor role") as approving:
        await app.approvals.approve(parked["approval_id"], who)
    with pytest.raises(RoleError, match="needs the supervisor role"):
        await app.approvals.reject(parked["approval_id"], who, reason="not needed")
    if who.proof.proven:  # the refusal says how the role is granted
        assert "Identity.Roles" in str(approving.value) and "pumpops tokens create" in str(approving.value)
    assert (await app.approvals.get(parked["approval_id"])).status.value == "pending"
    assert await count(app, "wo") == 0
    rows = await app.db.fetch_all(
        "SELECT function, outcome, principal FROM audit_log WHERE function LIKE 'approvals-%' ORDER BY id"
    )
    assert [(r["function"], r["outcome"], r["principal"]) for r in rows] == [
        ("approvals-approve", "denied", "bob"),
        ("approvals-reject", "denied", "bob"),
    ]


async def test_a_function_now_denied_by_policy_is_not_approved(tmp_path: Path, database_target: str | Path) -> None:
    first = settings_for(tmp_path, database=database_target)
    async with open_app(first) as app:
        parked = await propose(app)
    path = tmp_path / "appsettings.json"
    data = json.loads(path.read_text())
    data["Approval"] = {"Policy": {"work_orders": {"create_work_order": "deny"}}}
    path.write_text(json.dumps(data))
    async with open_app(load_settings(path, env={})) as app:
        with pytest.raises(ApprovalError, match=r"denied by Approval\.Policy"):
            await app.approvals.approve(parked["approval_id"], supervisor("bob"))
        assert (await app.approvals.get(parked["approval_id"])).status.value == "pending"
        assert await count(app, "wo") == 0


async def test_a_write_allowed_by_policy_runs_at_once_with_exactly_one_audit_row(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(tmp_path, Policy={"work_orders": {"create_work_order": "allow"}}, database=database_target)
    async with open_app(settings, warn=lambda _: None) as app:
        result = await propose(app, **{**ORDER, "pump_id": "pump-007"})  # runs in canonical form, its grant too
        assert result["status"] == "executed" and result["pump_id"] == "PUMP-007"
        # The start's row saying the policy allows unapproved writes comes first (test_approval_policy).
        rows = await app.db.fetch_all("SELECT function, outcome FROM audit_log WHERE door != 'startup'")
        assert [(r["function"], r["outcome"]) for r in rows] == [("work_orders-create_work_order", "ok")]
        assert await app.audit.verify() is None


async def test_a_read_set_to_require_approval_is_refused_not_parked(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(
        tmp_path, Policy={"assets": {"get_system_summary": "require_approval"}}, database=database_target
    )
    async with open_app(settings) as app:
        result = await app.kernel.invoke(app.kernel.get_function("assets", "get_system_summary"))
        assert result is not None and json.loads(str(result.value))["status"] == "denied"
        assert await count(app, "apr") == 0


async def test_calls_stopped_by_loop_detection_are_audited_as_rejected(
    tmp_path: Path, database_target: str | Path
) -> None:
    fake = ScriptedOllama(
        [
            reply(
                tool_calls=[
                    call("assets-get_system_summary"),
                    call("assets-get_system_summary"),
                    call("work_orders-create_work_order", **ORDER),
                    call("work_orders-create_work_order", **ORDER),
                ]
            ),
            reply("never asked"),
        ]
    )
    async with open_app(settings_for(tmp_path, database=database_target), chat_transport=fake.transport()) as app:
        result = await runner_for(app).run("Show the system summary and raise a work order for PUMP-007")
        statuses: list[Any] = [c.status for c in result.tool_calls]
        assert statuses == ["ok", "rejected", "pending_approval", "rejected"]
        rows = await app.db.fetch_all("SELECT outcome FROM audit_log ORDER BY id")
        assert sorted(r["outcome"] for r in rows) == sorted(statuses)
        assert await count(app, "apr") == 1


LOOK_ALIKES = {
    "zero-width space": "alice\u200b",
    "fullwidth letters": "\uff41\uff4c\uff49\uff43\uff45",
    "Cyrillic a": "\u0430lice",
    "soft hyphen": "alice\u00ad",
    "right-to-left override": "\u202ealice",
}


@pytest.mark.parametrize("approver", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
async def test_self_approval_cannot_be_dodged_by_a_look_alike_name(app: AppContext, approver: str) -> None:
    parked = await propose(app, principal="alice")
    with pytest.raises(ApprovalError, match="cannot approve it"):  # the chat's /approve goes this way too
        await app.approvals.approve(parked["approval_id"], supervisor(approver))
    with pytest.raises(ApprovalError, match="cannot approve it"):  # the store compares names itself as well
        await app.approval_store.claim(parked["approval_id"], approver, allow_self_approval=False)
    assert (await app.approvals.get(parked["approval_id"])).status.value == "pending"
    assert await count(app, "wo") == 0
    rows = await app.db.fetch_all("SELECT outcome FROM audit_log WHERE function = 'approvals-approve'")
    assert [r["outcome"] for r in rows] == ["denied"]


async def test_a_failed_execution_is_reported_in_whole_sentences_without_a_doubled_stop(app: AppContext) -> None:
    with acting_as(CallContext(principal="alice", session="s1", door="test")):
        function = app.kernel.get_function("alarms", "acknowledge_alarm")
        result = await app.kernel.invoke(function, KernelArguments(alarm_id="ALM-0002", note="Crew on the way"))
    assert result is not None
    approval_id = json.loads(str(result.value))["approval_id"]
    async with app.db.transaction() as conn:  # the stored arguments no longer match the hash that was approved
        await conn.execute(
            "UPDATE approvals SET arguments = ? WHERE approval_id = ?",
            (json.dumps({"alarm_id": "ALM-0002", "note": "Crew stood down"}), approval_id),
        )
    with pytest.raises(ApprovalError) as failed:
        await app.approvals.approve(approval_id, supervisor("bob"))
    assert str(failed.value) == (
        f"{approval_id} is approved but its execution failed: Approval {approval_id!r} was given for different "
        "arguments; nothing was executed. Approve it again to retry."
    )
