"""A value the results mark stale, stated in the answer as the current one."""

import json

import pytest

from checks.evidence import Evidence
from checks.fallback import evidence_answer
from checks.review import review_answer
from checks.sentences import reading_sentence, zone_sentence
from checks.staleness import stale_as_current

DETAILS = json.dumps(
    {
        "pump_id": "PUMP-003",
        "machine_group": 2,
        "foundation": "rigid",
        "latest_readings": [
            {
                "sensor_type": "vibration",
                "value": 4.2,
                "unit": "mm/s",
                "recorded_at": "2026-12-06T10:00:00Z",
                "alarm_threshold": 7.1,
                "stale": True,
                "age_seconds": 5400,
            },
            {
                "sensor_type": "bearing_temperature",
                "value": 61.5,
                "unit": "°C",
                "recorded_at": "2026-12-06T11:30:00Z",
                "alarm_threshold": 85.0,
            },
        ],
        "vibration_zone": {"zone": "B", "value_mm_s": 4.2, "meaning": "acceptable long-term"},
        "stale_note": "1 value is stale (no new reading for over 900 s (15 min); see age_seconds): do not present ...",
    }
)


def test_the_evidence_files_the_stale_value_with_its_time_and_age() -> None:
    evidence = Evidence.of([DETAILS])
    [stale] = evidence.stale_values
    assert (stale.pump, stale.quantity, stale.value, stale.unit) == ("PUMP-003", "vibration", 4.2, "mm/s")
    assert (stale.recorded_at, stale.age_seconds) == ("2026-12-06T10:00:00Z", 5400)
    assert [r.stale for r in evidence.readings] == [True, False]
    assert evidence.zones["PUMP-003"].stale_at == "2026-12-06T10:00:00Z"


@pytest.mark.parametrize(
    "answer",
    [
        "PUMP-003 vibration is 4.2 mm/s.",
        "The vibration is at 4.20 mm/s, well inside zone B.",
        "- PUMP-003: vibration 4.2 mm/s, bearing 61.5 °C",
    ],
)
def test_a_stale_value_stated_as_current_is_a_finding_with_its_reading_time(answer: str) -> None:
    [finding] = stale_as_current(answer, Evidence.of([DETAILS]))
    assert finding.startswith(
        "PUMP-003 vibration 4.2 mm/s is stale (last reading at 2026-12-06 10:00 UTC, stale), but the answer gives it"
    )


@pytest.mark.parametrize(
    "answer",
    [
        "PUMP-003's last vibration reading was 4.2 mm/s.",
        "PUMP-003 vibration was 4.2 mm/s as of 10:00 UTC.",
        "Vibration: 4.2 mm/s (stale, 90 minutes old).",
        "The vibration reading of 4.2 mm/s dates from 2026-12-06 and is outdated.",
        "PUMP-003 bearing temperature is 61.5 °C.",  # a fresh value
        "PUMP-007 vibration is 4.2 mm/s.",  # another pump's
    ],
)
def test_a_qualified_stale_value_or_a_fresh_one_is_no_finding(answer: str) -> None:
    assert stale_as_current(answer, Evidence.of([DETAILS])) == []


def test_nothing_is_judged_when_no_value_is_stale() -> None:
    fresh = DETAILS.replace('"stale": true', '"stale": false')
    assert Evidence.of([fresh]).stale_values == []
    assert stale_as_current("PUMP-003 vibration is 4.2 mm/s.", Evidence.of([fresh])) == []


def test_the_fleet_summary_worst_pump_and_a_trend_latest_count_as_stale_values() -> None:
    summary = {"worst_pump": {"pump_id": "PUMP-007", "vibration_mm_s": 9.4, "stale": True, "age_seconds": 7200}}
    trend = {
        "pump_id": "PUMP-004",
        "sensor_type": "flow",
        "unit": "m³/h",
        "latest": 118.5,
        "slope_per_day": -0.4,
        "window_end": "2026-12-06T09:00:00Z",
        "stale": True,
    }
    evidence = Evidence.of([json.dumps(summary), json.dumps(trend)])
    assert stale_as_current("PUMP-007 is the worst pump at 9.4 mm/s.", evidence) != []
    assert stale_as_current("PUMP-004 flow is 118.5 m³/h and falling.", evidence) != []
    assert evidence.trends[0].stale_at == "2026-12-06T09:00:00Z"


def test_the_check_acts_and_the_code_written_answer_qualifies_the_stale_value() -> None:
    evidence = Evidence.of([DETAILS])
    [finding] = review_answer("PUMP-003 vibration is 4.2 mm/s.", evidence, "How is PUMP-003?").acting()
    assert finding.check == "stale_readings"
    replaced = evidence_answer(evidence, [finding], "How is PUMP-003?")
    told = "PUMP-003 vibration: 4.2 mm/s (alarm threshold 7.1), last reading at 2026-12-06 10:00 UTC, stale."
    assert told in replaced
    assert review_answer(replaced, evidence, "How is PUMP-003?").acting() == []


def test_the_sentences_code_writes_mark_a_stale_reading_and_zone() -> None:
    evidence = Evidence.of([DETAILS])
    assert reading_sentence(evidence.readings[0]).endswith("last reading at 2026-12-06 10:00 UTC, stale.")
    assert not reading_sentence(evidence.readings[1]).endswith("stale.")
    assert zone_sentence(evidence.zones["PUMP-003"]).endswith("(last reading at 2026-12-06 10:00 UTC, stale).")


def test_an_alarm_value_of_the_stale_measurement_does_not_make_it_fresh() -> None:
    alarm = {"pump_id": "PUMP-003", "active_alarms": [{"alarm_id": "ALM-0009", "severity": "high",
                                                      "sensor_type": "vibration", "value": 4.2}]}  # fmt: skip
    assert stale_as_current("PUMP-003 vibration is 4.2 mm/s.", Evidence.of([DETAILS, json.dumps(alarm)])) != []
