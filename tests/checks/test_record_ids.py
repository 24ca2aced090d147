"""Record ids in an answer that no tool result or the question holds."""

import json

from checks.record_ids import ungrounded_ids


def test_record_ids_are_grounded_by_any_result_or_the_question_however_written() -> None:
    results = [json.dumps({"alarms": [{"alarm_id": "ALM-0001", "pump_id": "PUMP-007"}]}), "approval APR-1A2B3C4D"]
    answer = "ALM-0001 (pump-7) and apr-1a2b3c4d; also ALM-0002, PUMP-003, WO-0001 and PUMP-003 again."
    assert ungrounded_ids(answer, results, question="Is WO-1 done?") == ["ALM-0002", "PUMP-003"]
    assert ungrounded_ids("PUMP-007", []) == ["PUMP-007"]
    assert ungrounded_ids("No ids here: ISO 10816-3, Station-C, AF-400.", []) == []
