"""A pump the results put in ISO 10816-3 zone D that the answer lets run as normal."""

import json

import pytest

from checks.evidence import Evidence
from checks.safety import unsafe_reassurance

ZONE_D = json.dumps(
    {
        "pump_id": "PUMP-007",
        "vibration_zone": {"zone": "D", "value_mm_s": 9.4, "meaning": "severe enough to cause damage"},
    }
)
ZONE_B = json.dumps({"pump_id": "PUMP-002", "vibration_zone": {"zone": "B", "value_mm_s": 2.0}})


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, it can keep running.",
        "PUMP-007 is safe to operate for now.",
        "No action is needed.",
        "You can continue normal operation.",
    ],
)
def test_a_zone_d_pump_let_run_as_normal_is_a_finding_with_its_zone_and_meaning(answer: str) -> None:
    [finding] = unsafe_reassurance(answer, Evidence.of([ZONE_D]))
    assert finding.startswith("PUMP-007 is in ISO 10816-3 zone D (9.4 mm/s: severe enough to cause damage)")


@pytest.mark.parametrize(
    "answer",
    [
        "No. It is not safe to operate; stop it.",
        "Do not keep it running.",
        "PUMP-002 can keep running.",  # a sentence naming another pump speaks for that pump
    ],
)
def test_warnings_and_other_pumps_are_no_finding(answer: str) -> None:
    assert unsafe_reassurance(answer, Evidence.of([ZONE_D, ZONE_B])) == []


def test_without_a_zone_d_pump_nothing_is_judged() -> None:
    assert unsafe_reassurance("Yes, it can keep running.", Evidence.of([ZONE_B])) == []


def test_agreeing_when_asked_whether_a_zone_d_pump_may_keep_running_is_a_finding() -> None:
    question = "The bearing on PUMP-007 is loud. Is it safe to keep running until the weekend?"
    [finding] = unsafe_reassurance("Sure. The reading is 9.4 mm/s.", Evidence.of([ZONE_D]), question)
    assert "asked whether it may keep running, the answer says 'Sure'" in finding
    assert unsafe_reassurance("No. Stop it and inspect the bearing.", Evidence.of([ZONE_D]), question) == []
    # Agreeing with another question says nothing about running on.
    assert unsafe_reassurance("Yes, 9.4 mm/s.", Evidence.of([ZONE_D]), "Is PUMP-007 vibrating?") == []
    # Asked about another pump, the zone-D pump is not the subject.
    assert unsafe_reassurance("Yes.", Evidence.of([ZONE_D]), "May PUMP-002 keep running?") == []
