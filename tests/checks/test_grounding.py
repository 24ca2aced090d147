"""Groundedness check: numbers in a final answer that no tool result or the question supports."""

import json
from collections.abc import Sequence

import pytest

from checks import grounding
from checks.evidence import Evidence
from checks.grounding import misstated_comparisons


def ungrounded_numbers(answer: str, texts: Sequence[str], question: str = "") -> list[str]:
    return grounding.ungrounded_numbers(answer, Evidence.of(texts), question)


def misattributed_numbers(answer: str, texts: Sequence[str], question: str = "") -> list[str]:
    return grounding.misattributed_numbers(answer, Evidence.of(texts), question)


PUMP_STATUS = json.dumps(
    {
        "pump_id": "PUMP-007",
        "station": "Station-C",
        "model": "AF-400",
        "readings": [
            {"metric": "vibration_mm_s", "value": 9.4, "at": "2025-08-22T06:00:00Z"},
            {"metric": "flow_m3_h", "value": 1650, "trend": -0.3},
            {"metric": "bearing_temp_c", "value": 66.033},
            {"metric": "load_fraction", "value": 0.15},
        ],
        "alarms": [{"id": "ALM-0001", "raised": "2025-08-22", "detail": {"speed_rpm": 1200, "mean": 8.27}}],
    }
)


# --- true positives: numbers nobody gave the model ---------------------------------------------


def test_a_fabricated_vibration_value_is_flagged() -> None:
    answer = "PUMP-007 is vibrating at 12.7 mm/s, above the 9.4 mm/s seen earlier."
    assert ungrounded_numbers(answer, [PUMP_STATUS]) == ["12.7"]


def test_a_made_up_count_is_flagged() -> None:
    assert ungrounded_numbers("There were 37 starts this week.", [PUMP_STATUS]) == ["37"]


def test_a_wrong_rounding_is_flagged_while_the_right_one_passes() -> None:
    assert ungrounded_numbers("The mean is 8.4.", [PUMP_STATUS]) == ["8.4"]
    assert ungrounded_numbers("The mean is 8.3.", [PUMP_STATUS]) == []


def test_a_number_with_units_found_only_in_the_answer_is_flagged() -> None:
    assert ungrounded_numbers("Flow is 1500 m³/h.", [PUMP_STATUS]) == ["1500"]


def test_a_unit_glued_to_a_fabricated_number_does_not_hide_it() -> None:
    assert ungrounded_numbers("Peak was 12.7mm/s.", [PUMP_STATUS]) == ["12.7"]


def test_more_precision_than_the_source_is_flagged() -> None:
    assert ungrounded_numbers("The mean is 8.273.", ['{"mean": 8.27}']) == ["8.273"]


def test_derived_arithmetic_is_flagged_on_purpose() -> None:
    results = ['{"pump_a_kw": 31.5, "pump_b_kw": 42.25}']
    assert ungrounded_numbers("Together they draw 73.75 kW.", results) == ["73.75"]


def test_digits_inside_identifiers_in_results_are_no_support() -> None:
    results = ['{"pump_id": "PUMP-1500", "standard": "ISO 10816-3"}']
    assert ungrounded_numbers("Flow is 1500 m³/h, limit 10816.", results) == ["1500", "10816"]


def test_an_unsupported_percentage_is_flagged() -> None:
    assert ungrounded_numbers("Load is 25 %.", [PUMP_STATUS]) == ["25"]


def test_a_small_number_with_decimals_is_still_checked() -> None:
    assert ungrounded_numbers("Vibration is 7.0 mm/s.", [PUMP_STATUS]) == ["7.0"]


def test_flagged_numbers_are_returned_as_written_once_in_order() -> None:
    answer = "Values: -12.7, then 1,300 rpm, then -12.7 again and 37 starts."
    assert ungrounded_numbers(answer, [PUMP_STATUS]) == ["-12.7", "1,300", "37"]


def test_no_tool_results_means_every_real_quantity_is_flagged() -> None:
    assert ungrounded_numbers("Flow is 1650 m³/h with 3 pumps running.", []) == ["1650"]


# --- false-positive guards: formatting variants, identifiers and the like -----------------------


@pytest.mark.parametrize(
    ("answer", "results"),
    [
        pytest.param("Vibration is 9.40 mm/s.", ['{"v": 9.4}'], id="trailing-zero-in-answer"),
        pytest.param("Vibration is 9.4 mm/s.", ['{"v": "9.40 mm/s"}'], id="trailing-zero-in-result"),
        pytest.param("Speed is 1,200 rpm.", ['{"rpm": 1200}'], id="comma-thousands-in-answer"),
        pytest.param("Speed is 1200 rpm.", ["speed: 1,200 rpm"], id="comma-thousands-in-result"),
        pytest.param("Speed is 1\u2009200 rpm.", ['{"rpm": 1200.0}'], id="thin-space-thousands"),
        pytest.param("Speed is 1 200 rpm.", ['{"rpm": 1200}'], id="space-thousands"),
        pytest.param("Vibration is 9.4mm/s.", ['{"v": 9.4}'], id="unit-attached"),
        pytest.param("PUMP-007 and PUMP-047 are fine.", ["[]"], id="pump-ids"),
        pytest.param("ALM-0001 and ALM-0932 are cleared.", ["[]"], id="alarm-ids"),
        pytest.param("Raised on 2025-08-22 and on 22/08/2025.", ["[]"], id="dates"),
        pytest.param("Due 2026-12-02T17:00:00Z, i.e. 17:00 UTC.", ["[]"], id="timestamp-and-time"),
        pytest.param("Due 22 August 2025 or Aug 23, 2025.", ["[]"], id="written-dates"),
        pytest.param("Judge it by ISO 10816-3, ISO 20816-3:2022 and API 682.", ["[]"], id="standards"),
        pytest.param("Station-C runs an AF-400 and a VT-600.", ["[]"], id="stations-and-models"),
        pytest.param("Use v1.2 of the procedure, Section 4.2, step 14, Group 12.", ["[]"], id="references"),
        pytest.param("Release 1.2.3 is installed.", ["[]"], id="dotted-version"),
        pytest.param("It is the 21st alarm.", ["[]"], id="ordinal"),
        pytest.param("11. Check the seal\n12) Check the bearing\n(13) Done", ["[]"], id="list-markers"),
        pytest.param("Load is 15 %.", ['{"load": 0.15}'], id="percent-from-fraction"),
        pytest.param("Load is 15%.", ["load 15 %"], id="percent-from-percent"),
        pytest.param("Load is 14.8 percent.", ['{"load": 0.148}'], id="percent-word-from-fraction"),
        pytest.param("Suction is -3.2 bar.", ['{"suction_bar": -3.2}'], id="negative"),
        pytest.param("Suction is \u22123.2 bar.", ['{"suction_bar": -3.2}'], id="unicode-minus"),
        pytest.param("Flow fell by 0.3 m³/h.", ['{"trend": -0.3}'], id="sign-restated-in-prose"),
        pytest.param("Bearing is at 66 °C.", ['{"bearing_temp_c": 66.033}'], id="rounded-to-integer"),
        pytest.param("Mean is 8.3 mm/s.", ['{"mean": 8.27}'], id="rounded-to-one-decimal"),
        pytest.param("Speed is 1200 rpm.", [PUMP_STATUS], id="json-nested-value"),
        pytest.param("Bearing is at 66.033 °C.", ['{"a": {"b": [[{"c": "66.033 degC"}]]}}'], id="json-nested-string"),
        pytest.param("Flow is 1650 m³/h.", ["Flow: 1650 m3/h, head 42 m"], id="plain-text-result"),
        pytest.param("Installed since 2024.", ['{"installed": "2024-03-01"}'], id="year-from-a-date"),
        pytest.param("3 pumps, 2 alarms, 0 trips.", ["[]"], id="small-counts"),
        pytest.param("Flow from 10-15 m³/h.", ['{"min": 10, "max": 15}'], id="hyphen-range"),
        pytest.param("No numbers at all.", ["not json {"], id="no-numbers"),
        pytest.param("", [PUMP_STATUS], id="empty-answer"),
    ],
)
def test_formatting_variants_and_identifiers_raise_no_false_alarm(answer: str, results: list[str]) -> None:
    assert ungrounded_numbers(answer, results) == []


def test_a_number_from_the_question_is_grounded() -> None:
    question = "Is 1450 rpm too slow for PUMP-007?"
    assert ungrounded_numbers("Yes, 1450 rpm is below 1,200? No: 1450 > 1200.", [PUMP_STATUS], question) == []


def test_the_question_does_not_ground_other_numbers() -> None:
    assert ungrounded_numbers("It runs at 1460 rpm.", [], "Is 1450 rpm too slow?") == ["1460"]


def test_a_long_answer_mixes_grounded_and_ungrounded_numbers() -> None:
    answer = (
        "Status of PUMP-007 (Station-C, AF-400) on 2025-08-22:\n"
        "1. Vibration 9.40 mm/s, mean 8.3 mm/s (ISO 10816-3 zone B).\n"
        "2. Flow 1,650 m³/h, load 15 %, bearing 66 °C.\n"
        "3. ALM-0001 raised at 06:00; estimated 480 h to failure."
    )
    assert ungrounded_numbers(answer, [PUMP_STATUS]) == ["480"]


def test_an_id_whose_hex_reads_as_a_huge_exponent_neither_crashes_nor_grounds_anything() -> None:
    # "28e8194714" inside a uuid parses as 28e8194714 = 28 * 10**8194714, beyond decimal arithmetic's range: it used
    # to raise decimal.Overflow and fail the whole turn (seen with a chunk id of the manuals).
    results = [json.dumps({"chunk_id": "7059e41a-04a5-507a-8afb-28e8194714e3", "vibration_mm_s": 9.4})]
    assert ungrounded_numbers("PUMP-007 vibrates at 9.4 mm/s, not 12.5 mm/s.", results, "q") == ["12.5"]
    assert ungrounded_numbers("Read 28e8194714 mm/s.", results, "q") == []  # no quantity: not checked


# --- attribution: a grounded number told of the wrong pump ------------------------------------

FLEET_TEMPERATURES = json.dumps(
    {
        "sensor_type": "bearing_temperature",
        "count": 3,
        "readings": [
            {"pump_id": "PUMP-007", "value": 81.0, "alarm_threshold": 85.0},
            {"pump_id": "PUMP-004", "value": 72.0, "alarm_threshold": 85.0},
            {"pump_id": "PUMP-006", "value": 64.5, "alarm_threshold": 80.0},
        ],
    }
)
PUMP_NAMES = json.dumps(
    {"pumps": [{"pump_id": "PUMP-006", "name": "Transfer 2"}, {"pump_id": "PUMP-007", "name": "Transfer 3"}]}
)


def test_a_value_told_of_another_pump_than_its_own_is_flagged_with_the_owner() -> None:
    # Seen with the local model: PUMP-007's 81 °C written as "Pump-006"'s.
    assert misattributed_numbers("Pump-006 has a bearing temperature of 81 °C.", [FLEET_TEMPERATURES]) == [
        "81 for PUMP-006 (the results give it for PUMP-007)"
    ]
    assert misattributed_numbers("Transfer 2 runs at 81 °C.", [FLEET_TEMPERATURES, PUMP_NAMES]) == [
        "81 for PUMP-006 (the results give it for PUMP-007)"
    ]


def test_each_line_of_a_list_is_judged_for_its_own_pump() -> None:
    swapped = "- PUMP-007: 72 °C\n- PUMP-004: 81 °C\n- PUMP-006: 64.5 °C"
    assert misattributed_numbers(swapped, [FLEET_TEMPERATURES]) == [
        "72 for PUMP-007 (the results give it for PUMP-004)",
        "81 for PUMP-004 (the results give it for PUMP-007)",
    ]
    assert misattributed_numbers("- PUMP-007: 81 °C\n- PUMP-004: 72 °C", [FLEET_TEMPERATURES]) == []


def test_shared_fleet_question_and_unknown_values_are_not_attribution_errors() -> None:
    results = [FLEET_TEMPERATURES]
    assert misattributed_numbers("PUMP-004 is at 72 °C, under its 85 °C limit.", results) == []  # its own limit too
    assert misattributed_numbers("PUMP-004 is one of 3 pumps read; 81 is the highest.", results) == []  # 3 is small
    assert misattributed_numbers("PUMP-004 is under 81 °C.", results, question="Is PUMP-004 under 81?") == []
    assert misattributed_numbers("PUMP-004 is at 99 °C.", results) == []  # ungrounded_numbers' case, not this one
    assert misattributed_numbers("PUMP-004 is at 81 °C.", [*results, "Manual: bearings run up to 81 °C."]) == []


def test_sentences_naming_several_pumps_or_comparing_are_left_alone() -> None:
    results = [FLEET_TEMPERATURES]
    assert misattributed_numbers("PUMP-007 and PUMP-004 are at 72 and 81 °C respectively.", results) == []
    assert misattributed_numbers("PUMP-004 is at 72 °C, cooler than the next pump at 81 °C.", results) == []
    assert misattributed_numbers("The hottest bearing runs at 81 °C.", results) == []  # no pump named
    assert misattributed_numbers("PUMP-008 is at 81 °C.", results) == []  # nothing of PUMP-008 to judge by
    assert misattributed_numbers("PUMP-004 is at 81 °C.", [json.dumps({"pump_id": "PUMP-007", "value": 81})]) == []


def test_fleet_rankings_negations_and_timestamps_are_not_attribution_errors() -> None:
    # From the review: correct answers that the first version flagged.
    readings = json.dumps(
        {
            "readings": [
                {"pump_id": "PUMP-007", "value": 81.0, "recorded_at": "2026-12-05T10:16:00Z"},
                {"pump_id": "PUMP-004", "value": 72.0, "recorded_at": "2026-12-05T10:03:00Z"},
                {"pump_id": "PUMP-006", "value": 64.5},
            ]
        }
    )
    for answer in (
        "PUMP-004 is at 72 °C, below the fleet maximum of 81 °C.",
        "Readings range from 64.5 to 81 °C, with PUMP-004 at 72 °C.",
        "The hottest bearing, 81 °C, is not on PUMP-004.",
        "PUMP-004 has been offline for 16 days.",  # 16: a minute of PUMP-007's timestamp, a part of no pump
    ):
        assert misattributed_numbers(answer, [readings]) == [], answer
    assert misattributed_numbers("PUMP-004 reads 81 °C.", [readings]) == [
        "81 for PUMP-004 (the results give it for PUMP-007)"
    ]


@pytest.mark.parametrize(
    ("answer", "flagged"),
    [
        # Answers the local model wrote (2026-12-05 evals): both numbers in the result, the comparison false.
        (
            "PUMP-002 is online and has a bearing temperature of 61 °C, which is above the alarm threshold of 85 °C.",
            ["61 is not above 85"],
        ),
        (
            "Current reading of PUMP-005 vibration is 3.9 mm/s, with ISO 10816-3 zone B, which is above the alarm "
            "threshold of 4.5 mm/s.",
            ["3.9 is not above 4.5"],
        ),
        (
            "PUMP-007 is at 9.4 mm/s, still below its trip limit of 7.1 mm/s; flow 1,650 exceeds the minimum of 1,530.",
            ["9.4 is not below 7.1"],
        ),
        (
            "81 °C, over the alarm level of 85 °C. Later: 90 °C, within the limit of 85 °C.",
            ["81 is not over 85", "90 is not within 85"],
        ),
        # Right way round, or not a value set against a limit: nothing to flag.
        (
            "Vibration 9.4 mm/s on the drive-end bearing housing, above the ISO 10816-3 zone C/D boundary of 7.1 mm/s.",
            [],
        ),
        ("9.4 mm/s for PUMP-007 and 7.8 mm/s for PUMP-004, both exceeding the alarm threshold of 4.5 mm/s.", []),
        ("PUMP-007 runs at 9.4 mm/s, 2.3 mm/s above the limit of 7.1 mm/s.", []),  # a margin, not the value
        ("81 °C is not above the alarm threshold of 85 °C.", []),
        ("Flow is at 95 %, above the minimum of 120 m³/h.", []),  # a percentage: no like-for-like comparison
        ("PUMP-004 has 7.8 mm/s, higher than PUMP-007 at 9.4 mm/s.", []),  # no limit: comparing pumps is not judged
        ("The bearing sits above the seal; 81 °C is read there.", []),
        ("It is at 85 °C, above the threshold of 85 °C.", []),  # equal: left alone
        ("9.4 mm/s (within zone D), above the C/D boundary of 7.1 mm/s.", []),  # "above" owns the boundary
    ],
)
def test_a_value_compared_with_a_limit_the_wrong_way_round_is_flagged(answer: str, flagged: list[str]) -> None:
    assert misstated_comparisons(answer) == flagged


def test_a_number_an_earlier_turn_read_is_supported_in_a_follow_up() -> None:
    answer = "At 9.4 mm/s the manual says to stop the pump."
    # This turn read only a manual passage; the 9.4 came from the earlier turn's pump details.
    passage = json.dumps({"hits": [{"title": "Vibration", "text": "Stop a pump in zone D."}]})
    assert grounding.ungrounded_numbers(answer, Evidence.of([passage])) == ["9.4"]
    assert grounding.ungrounded_numbers(answer, Evidence.of([passage]), read_texts=[PUMP_STATUS]) == []
    assert grounding.ungrounded_numbers("At 9.5 mm/s, stop it.", Evidence.of([passage]), read_texts=[PUMP_STATUS]) == [
        "9.5"
    ]
