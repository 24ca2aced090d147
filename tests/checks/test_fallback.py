"""The answer code writes from the evidence when the model's answer failed its checks twice."""

import json

from checks.evidence import Evidence
from checks.fallback import evidence_answer
from checks.review import Finding

PUMP_LIST = json.dumps(
    [
        {"pump_id": "PUMP-005", "name": "Booster 5", "location": "Station-C", "status": "online"},
        {"pump_id": "PUMP-007", "name": "Booster 7", "location": "Station-C", "status": "online"},
    ]
)
INVENTED = [Finding("ungrounded_numbers", "10816")]


def test_with_no_zone_alarm_or_reading_to_give_it_names_the_tools_and_the_records_they_returned() -> None:
    evidence = Evidence()
    evidence.add("assets-list_pumps", PUMP_LIST)
    answer = evidence_answer(evidence, INVENTED, "Which pump at Station-C vibrates most?")
    assert answer.splitlines()[1:] == ["Tools run: assets-list_pumps.", "Records in their results: PUMP-005, PUMP-007."]


def test_a_result_holding_no_record_names_only_the_tool() -> None:
    evidence = Evidence()
    evidence.add("docs-search_manuals", "Check the suction strainer before restarting.")
    assert evidence_answer(evidence, INVENTED, "What now?").splitlines()[1:] == ["Tools run: docs-search_manuals."]


def test_a_turn_that_ran_no_tool_says_so() -> None:
    assert evidence_answer(Evidence(), INVENTED, "What now?").splitlines()[1:] == ["No tool ran in this turn."]


def test_an_invented_number_about_a_named_pump_gives_that_pumps_readings() -> None:
    details = {
        "pump_id": "PUMP-004",
        "sensors": [{"sensor_type": "flow", "value": 1520.0, "unit": "m³/h", "recorded_at": "2026-12-06T10:00:00Z"}],
    }
    evidence = Evidence()
    evidence.add("assets-get_pump_details", json.dumps(details))
    answer = evidence_answer(evidence, [Finding("ungrounded_numbers", "1700")], "What is PUMP-004's flow?")
    assert "1520" in answer and "1700" not in answer
