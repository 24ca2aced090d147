"""Approval preconditions: a parked write records the state it assumed, and a changed state stops a stale approval."""

import json
from typing import Any

import pytest
from semantic_kernel.exceptions import KernelInvokeException
from semantic_kernel.functions import KernelArguments

from governance import ApprovalError, ApprovalStatus, Precondition
from governance.identity import CallContext, acting_as
from kernel_setup import AppContext
from tests.callers import supervisor
from tests.governance.test_approvals import ORDER, chain_ok, count, propose

NOTE = "Crew dispatched; bearing check under way"


async def acknowledge(app: AppContext, principal: str = "alice", **arguments: Any) -> dict[str, Any]:
    with acting_as(CallContext(principal=principal, session="s1", door="test")):
        function = app.kernel.get_function("alarms", "acknowledge_alarm")
        result = await app.kernel.invoke(function, KernelArguments(**(arguments or {"alarm_id": "ALM-0001"})))
    assert result is not None
    return json.loads(str(result.value))


async def last_row(app: AppContext, function: str) -> Any:
    row = await app.db.fetch_one(
        "SELECT outcome, detail FROM audit_log WHERE function = ? ORDER BY id DESC LIMIT 1", (function,)
    )
    assert row is not None
    return row


async def test_a_parked_write_records_the_state_it_assumed(app: AppContext) -> None:
    order = await app.approvals.get((await propose(app))["approval_id"])
    assert order.preconditions == [
        Precondition(subject="PUMP-007", expects="is in the asset registry and not decommissioned"),
        Precondition(subject="PUMP-007", expects=f"has no open work order with the summary {ORDER['summary']!r}"),
    ]
    ack = await app.approvals.get((await acknowledge(app, alarm_id="ALM-0001", note=NOTE))["approval_id"])
    assert ack.preconditions == [Precondition(subject="ALM-0001", expects="is active and not acknowledged")]


async def test_an_alarm_acknowledged_between_proposal_and_approval_is_not_acknowledged_again(
    app: AppContext,
) -> None:
    stale = (await acknowledge(app, alarm_id="ALM-0003", note=NOTE))["approval_id"]
    other = (await acknowledge(app, "carol", alarm_id="ALM-0003", note="On site now"))["approval_id"]
    await app.approvals.approve(other, supervisor("dave"))  # acknowledged meanwhile, through another approval
    acked = await app.db.fetch_one("SELECT acknowledged_at FROM alarms WHERE alarm_id = 'ALM-0003'")
    assert acked is not None

    with pytest.raises(ApprovalError) as refused:
        await app.approvals.approve(stale, supervisor("bob"))

    reason = f"ALM-0003 was acknowledged by dave at {acked['acknowledged_at']}"
    assert reason in str(refused.value) and "not executed" in str(refused.value)
    row = await app.db.fetch_one("SELECT acknowledged_by, acknowledgement_note FROM alarms WHERE alarm_id = 'ALM-0003'")
    assert row is not None and tuple(row) == ("dave", "On site now")  # nothing written
    approval = await app.approvals.get(stale)
    assert approval.status is ApprovalStatus.REFUSED and approval.refused_at is not None
    assert approval.reason is not None and reason in approval.reason
    assert approval.executed_at is None and approval.result is None
    audited = await last_row(app, "alarms-acknowledge_alarm")
    assert audited["outcome"] == "denied" and stale in audited["detail"] and reason in audited["detail"]
    assert await chain_ok(app)


async def test_a_duplicate_work_order_created_meanwhile_refuses_the_stale_approval(app: AppContext) -> None:
    stale = (await propose(app))["approval_id"]
    other = (await propose(app, "carol"))["approval_id"]  # the same work, asked for by someone else
    assert other != stale
    created = await app.approvals.approve(other, supervisor("bob"))

    with pytest.raises(ApprovalError, match="PUMP-007 already has open work order WO-0001 with this summary"):
        await app.approvals.approve(stale, supervisor("bob"))

    assert await count(app, "wo") == 1 and created.result["work_order_id"] == "WO-0001"
    assert (await app.approvals.get(stale)).status is ApprovalStatus.REFUSED
    idempotency = await app.db.fetch_one("SELECT COUNT(*) AS n FROM idempotency")
    assert idempotency is not None and idempotency["n"] == 1  # the refusal is no result of its intent
    assert (await last_row(app, "work_orders-create_work_order"))["outcome"] == "denied"
    assert await chain_ok(app)


async def test_a_pump_decommissioned_meanwhile_refuses_the_stale_approval_and_new_proposals(app: AppContext) -> None:
    stale = (await propose(app))["approval_id"]
    async with app.db.transaction() as conn:  # the asset register takes the pump out of service
        await conn.execute(
            "UPDATE pumps SET decommissioned_at = '2026-01-05T08:00:00+00:00' WHERE pump_id = 'PUMP-007'"
        )

    with pytest.raises(ApprovalError, match="PUMP-007 was decommissioned at 2026-01-05T08:00:00"):
        await app.approvals.approve(stale, supervisor("bob"))
    with pytest.raises(ApprovalError, match="refused when it was to run"):
        await app.approvals.approve(stale, supervisor("bob"))  # a refused approval never runs, however often approved

    assert await count(app, "wo") == 0
    refused = await app.approvals.list("refused")
    assert [a.id for a in refused.approvals] == [stale]
    assert (await app.approvals.list("rejected")).total == 0
    with pytest.raises(KernelInvokeException):
        await propose(app, **{**ORDER, "summary": "Replace the impeller"})
    assert (await last_row(app, "work_orders-create_work_order"))["detail"].startswith("PUMP-007 was decommissioned")
    assert await chain_ok(app)


@pytest.mark.parametrize(
    ("function", "arguments", "recovery"),
    [
        ("create_work_order", {**ORDER, "summary": "x"}, "summary must be 5-500 characters describing the work"),
        ("create_work_order", {**ORDER, "pump_id": "pump seven"}, "Call assets-list_pumps to see valid ids"),
        ("create_work_order", {**ORDER, "pump_id": ""}, "a write names it exactly, like 'PUMP-007'"),
        (
            "create_work_order",
            {**ORDER, "pump_id": "pump 7"},
            "If you mean PUMP-007, call again with pump_id='PUMP-007'",
        ),
        ("acknowledge_alarm", {"alarm_id": "ALM-0001", "note": ""}, "note must be 1-500 characters"),
        ("acknowledge_alarm", {"alarm_id": "alarm one", "note": NOTE}, "Call alarms-list_alarms to see valid ids"),
        ("acknowledge_alarm", {"alarm_id": "alarm 1", "note": NOTE}, "If you mean ALM-0001, call again with"),
    ],
)
async def test_bad_arguments_are_refused_at_proposal_with_a_recovery_message_and_nothing_parked(
    app: AppContext, function: str, arguments: dict[str, Any], recovery: str
) -> None:
    plugin = "work_orders" if function == "create_work_order" else "alarms"
    with acting_as(CallContext(principal="alice", session="s1", door="test")):
        with pytest.raises(KernelInvokeException) as refused:
            await app.kernel.invoke(app.kernel.get_function(plugin, function), KernelArguments(**arguments))
    assert recovery in str(refused.value.__cause__)
    assert await count(app, "apr") == 0
    audited = await last_row(app, f"{plugin}-{function}")
    assert audited["outcome"] == "rejected" and recovery in audited["detail"]
    assert await chain_ok(app)


async def test_an_alarm_already_acknowledged_is_refused_at_proposal_saying_by_whom(app: AppContext) -> None:
    await app.approvals.approve(
        (await acknowledge(app, alarm_id="ALM-0002", note=NOTE))["approval_id"], supervisor("bob")
    )
    with pytest.raises(KernelInvokeException) as refused:
        await acknowledge(app, "carol", alarm_id="ALM-0002", note="Me too")
    assert "ALM-0002 was acknowledged by bob at" in str(refused.value.__cause__)
    assert await count(app, "apr") == 1


@pytest.mark.parametrize("spelling", ["pump-007", " Pump-007 ", "PUMP-7", "PUMP007"])
async def test_spellings_of_a_pump_id_are_one_intent(app: AppContext, spelling: str) -> None:
    exact = await propose(app)
    loose = await propose(app, **{**ORDER, "pump_id": spelling})
    assert loose["approval_id"] == exact["approval_id"] and await count(app, "apr") == 1


@pytest.mark.parametrize("spelling", ["alm-0001", " ALM-0001 ", "ALM-1", "alm1"])
async def test_spellings_of_an_alarm_id_are_one_intent(app: AppContext, spelling: str) -> None:
    exact = await acknowledge(app, alarm_id="ALM-0001", note=NOTE)
    loose = await acknowledge(app, alarm_id=spelling, note=f" {NOTE} ")
    assert loose["approval_id"] == exact["approval_id"] and await count(app, "apr") == 1
    assert (await app.approvals.get(loose["approval_id"])).arguments == {"alarm_id": "ALM-0001", "note": NOTE}
