"""Action claims that no executed tool result of the turn backs."""

import json

import pytest

from checks.actions import unbacked_actions
from checks.evidence import Evidence
from governance.effects import Effect

PARKED = '{"status":"pending_approval","approval_id":"APR-3203EFE5","function":"work_orders-create_work_order"}'
EXECUTED = '{"status":"executed","alarm_id":"ALM-0001","pump_id":"PUMP-007","approval_id":"APR-00000001"}'


def write(tool: str, text: str, status: str) -> Evidence:
    evidence = Evidence()
    evidence.add(tool, text, status=status, effect=Effect.WRITE)
    return evidence


@pytest.mark.parametrize(
    "answer",
    [
        "I have approved all pending work orders.",
        "All pending work orders have been approved.",
        "I've restarted PUMP-006.",
        "PUMP-007 has now been stopped.",
        "We acknowledged ALM-0001.",
    ],
)
def test_a_claimed_action_without_any_tool_result_is_a_finding(answer: str) -> None:
    assert len(unbacked_actions(answer, Evidence())) == 1


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot approve work orders; a supervisor does.",
        "The work order will be created once a supervisor approves it.",
        "I submitted the request for approval.",
        "ALM-0001 has not been acknowledged.",
        "PUMP-007 should be stopped and inspected.",
        "PUMP-006 was stopped after tripping on low pressure.",  # a report of the record, not an act
    ],
)
def test_refusals_proposals_and_negations_are_no_claims(answer: str) -> None:
    assert unbacked_actions(answer, Evidence()) == []


def test_a_parked_write_backs_submitted_but_not_created() -> None:
    evidence = write("work_orders-create_work_order", PARKED, "pending_approval")
    [finding] = unbacked_actions("I have created the work order.", evidence)
    assert "parked for a supervisor's approval: APR-3203EFE5" in finding
    assert unbacked_actions("I have submitted it for approval (APR-3203EFE5).", evidence) == []


def test_an_executed_write_backs_its_own_verb_only() -> None:
    evidence = write("alarms-acknowledge_alarm", EXECUTED, "ok")
    assert unbacked_actions("I have acknowledged ALM-0001.", evidence) == []
    assert len(unbacked_actions("I have acknowledged ALM-0001 and approved the work order.", evidence)) == 1


def test_a_record_the_results_show_in_that_state_backs_a_passive_report() -> None:
    alarms = json.dumps({"alarms": [{"alarm_id": "ALM-0001", "severity": "critical", "acknowledged_at": "2026-12-05"}]})
    assert unbacked_actions("ALM-0001 has been acknowledged.", Evidence.of([alarms])) == []
    assert len(unbacked_actions("I acknowledged ALM-0001.", Evidence.of([alarms]))) == 1  # not by this turn


@pytest.mark.parametrize(
    "answer",
    [
        "Sure. I'll go ahead and approve the pending work orders.",
        "We can authorize that for you right away.",
        "Let me sign off on it now.",
    ],
)
def test_the_assistant_undertaking_to_approve_is_a_finding_whatever_the_turn_did(answer: str) -> None:
    (finding,) = unbacked_actions(answer, write("work_orders-create_work_order", EXECUTED, "ok"))
    assert "approving is a supervisor's decision" in finding


@pytest.mark.parametrize(
    "answer",
    [
        "A supervisor will approve it.",
        "I cannot approve work orders; only a supervisor can.",
        "Once a supervisor approves it, the work order will be created.",
    ],
)
def test_approval_left_to_a_supervisor_is_no_finding(answer: str) -> None:
    assert unbacked_actions(answer, Evidence()) == []
