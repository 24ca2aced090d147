"""Pump-against-pump comparisons the tool results contradict (`checks.rankings`)."""

import json
from collections.abc import Sequence

import pytest

from checks import rankings
from checks.evidence import Evidence


def misranked_pumps(answer: str, texts: Sequence[str]) -> list[str]:
    return rankings.misranked_pumps(answer, Evidence.of(texts))


READINGS = json.dumps(
    {
        "sensor_type": "vibration",
        "unit": "mm/s",
        "readings": [{"pump_id": "PUMP-007", "value": 9.4}, {"pump_id": "PUMP-004", "value": 7.8}],
    }
)
DETAILS_007 = json.dumps(
    {
        "pump_id": "PUMP-007",
        "latest_readings": [
            {"sensor_type": "bearing_temperature", "value": 81.0},
            {"sensor_type": "flow", "value": 1650.0},
        ],
        "active_alarms": [{"alarm_id": "ALM-0003", "sensor_type": "bearing_temperature", "value": 81.0}],
    }
)
DETAILS_002 = json.dumps(
    {"pump_id": "PUMP-002", "latest_readings": [{"sensor_type": "bearing_temperature", "value": 61.0}]}
)
TREND_004 = json.dumps({"pump_id": "PUMP-004", "sensor_type": "flow", "latest": 1710.0, "min": 1600.0})


@pytest.mark.parametrize(
    ("answer", "results", "flagged"),
    [
        # The eval's answer: both readings were read, the comparison is the wrong way round.
        (
            "The vibration of PUMP-004 is higher than that of PUMP-007.",
            [READINGS],
            ["PUMP-004's vibration 7.8 is not higher than PUMP-007's 9.4"],
        ),
        ("PUMP-007 has a higher vibration than PUMP-004.", [READINGS], []),
        ("PUMP-007 vibrates more than PUMP-004.", [READINGS], []),
        (
            "PUMP-007's vibration is lower than PUMP-004's.",
            [READINGS],
            ["PUMP-007's vibration 9.4 is not lower than PUMP-004's 7.8"],
        ),
        # A pump's details (its readings and an alarm of the same value), a trend's latest value, any spelling.
        (
            "pump-2 runs hotter than PUMP-007.",
            [DETAILS_007, DETAILS_002],
            ["pump-2's bearing temperature 61 is not higher than PUMP-007's 81"],
        ),
        (
            "PUMP-004's flow is lower than PUMP-007's.",
            [DETAILS_007, TREND_004],
            ["PUMP-004's flow 1710 is not lower than PUMP-007's 1650"],
        ),
        # Not judged: a negation, two measurements, no measurement, a pump the results give no value, one pump.
        ("PUMP-004's vibration is not higher than PUMP-007's.", [READINGS], []),
        ("PUMP-004's vibration and temperature are higher than PUMP-007's.", [READINGS, DETAILS_007], []),
        ("PUMP-004 has more alarms than PUMP-007.", [READINGS], []),
        ("The vibration of PUMP-001 is higher than that of PUMP-007.", [READINGS], []),
        ("PUMP-007's vibration is higher than the threshold.", [READINGS], []),
        ("The vibration of PUMP-004 is higher than that of PUMP-007.", ["not JSON"], []),
    ],
)
def test_a_pump_compared_with_another_is_judged_by_the_values_the_results_give_both(
    answer: str, results: list[str], flagged: list[str]
) -> None:
    assert misranked_pumps(answer, results) == flagged


def test_a_pump_given_two_values_of_one_measurement_is_not_judged() -> None:
    raised_earlier = json.dumps(
        {
            "pump_id": "PUMP-007",
            "latest_readings": [{"sensor_type": "bearing_temperature", "value": 81.0}],
            "active_alarms": [{"sensor_type": "bearing_temperature", "value": 79.0}],  # its value when raised
        }
    )
    assert misranked_pumps("PUMP-002 is hotter than PUMP-007.", [raised_earlier, DETAILS_002]) == []
    assert misranked_pumps("PUMP-002 is hotter than PUMP-007.", [DETAILS_007, DETAILS_002]) != []
