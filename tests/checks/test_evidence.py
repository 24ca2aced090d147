"""The turn's evidence: each result parsed once into records, readings, alarms, zones, actions and passages."""

import json

from checks.evidence import Evidence, parse_result
from governance.effects import Effect
from twin.iso10816 import Zone

DETAILS = json.dumps(
    {
        "pump_id": "PUMP-007",
        "machine_group": 1,
        "foundation": "rigid",
        "latest_readings": [
            {"sensor_type": "vibration", "value": 9.4, "unit": "mm/s", "recorded_at": "2026-12-06T02:00:00Z"},
            {"sensor_type": "bearing_temperature", "value": 81.0, "unit": "°C", "alarm_threshold": 85.0},
        ],
        "vibration_zone": {"zone": "D", "meaning": "severe enough to cause damage", "value_mm_s": 9.4},
        "active_alarms": [{"alarm_id": "ALM-0001", "severity": "critical", "sensor_type": "vibration"}],
    }
)


def test_a_pumps_details_give_its_record_readings_zone_and_alarms() -> None:
    evidence = Evidence.of([DETAILS])
    assert evidence.records["PUMP-007"]["machine_group"] == 1
    vibration = next(r for r in evidence.readings if r.quantity == "vibration")
    assert (vibration.pump, vibration.value, vibration.unit, vibration.recorded_at) == (
        "PUMP-007",
        9.4,
        "mm/s",
        "2026-12-06T02:00:00Z",
    )
    temperature = next(r for r in evidence.readings if r.quantity == "bearing_temperature")
    assert temperature.threshold == 85.0 and temperature.unit == "°C"
    zone = evidence.zones["PUMP-007"]
    assert zone.zone is Zone.D and zone.value_mm_s == 9.4 and not zone.computed
    assert [a.describe() for a in evidence.active_alarms()] == ["ALM-0001 (critical on PUMP-007)"]


def test_a_zone_the_results_do_not_give_is_computed_from_the_machine_class() -> None:
    data = json.loads(DETAILS)
    del data["vibration_zone"]
    zone = Evidence.of([json.dumps(data)]).zones["PUMP-007"]
    assert zone.zone is Zone.D and zone.computed and zone.meaning == "severe enough to cause damage"
    data["foundation"] = "flexible"  # Group 1 flexible: C/D at 11.0 mm/s
    assert Evidence.of([json.dumps(data)]).zones["PUMP-007"].zone is Zone.C


def test_writes_are_actions_executed_or_parked_with_their_approval_id() -> None:
    evidence = Evidence()
    parked = '{"status":"pending_approval","approval_id":"APR-3203EFE5","function":"work_orders-create_work_order"}'
    evidence.add("work_orders-create_work_order", parked, status="pending_approval", effect=Effect.WRITE)
    done = '{"status":"executed","work_order_id":"WO-0003","pump_id":"PUMP-007","approval_id":"APR-00000001"}'
    evidence.add("work_orders-create_work_order", done, status="ok", effect=Effect.WRITE)
    evidence.add("assets-get_system_summary", "{}")
    first, second = evidence.actions
    assert first.parked and not first.executed and first.approval_id == "APR-3203EFE5"
    assert second.executed and second.records == ("WO-0003", "APR-00000001", "PUMP-007")


def test_manual_passages_keep_title_section_and_score_and_text_stays_text() -> None:
    hits = {"question": "q", "hits": [{"title": "Cavitation", "section": "2.1", "score": 0.61, "text": "NPSH."}]}
    evidence = Evidence.of([json.dumps(hits), "plain words, not JSON"])
    assert [(p.title, p.section, p.score) for p in evidence.passages] == [("Cavitation", "2.1", 0.61)]
    assert [r.is_json for r in evidence.results] == [True, False]


def test_a_summary_count_no_listed_alarm_accounts_for_is_kept_as_a_count() -> None:
    summary = json.dumps({"active_alarms_by_severity": {"critical": 1, "high": 1}})
    evidence = Evidence.of([summary, DETAILS])
    assert [a.describe() for a in evidence.active_alarms()] == [
        "ALM-0001 (critical on PUMP-007)",
        "1 high active alarm (fleet summary)",
    ]


def test_parse_result_reads_json_and_leaves_text_unparsed() -> None:
    assert parse_result('{"a": 1}') == {"a": 1}
    assert parse_result("not json") is not None and not isinstance(parse_result("not json"), dict)


def test_a_trend_is_filed_with_its_projection_against_the_alarm_threshold() -> None:
    trend_result = {
        "pump_id": "pump-7",
        "sensor_type": "bearing_temperature",
        "unit": "°C",
        "window_days": 30,
        "min": 72.52,
        "max": 83.77,
        "latest": 81.0,
        "slope_per_day": 0.247,
        "alarm_threshold": 85.0,
        "projection": "crosses_threshold",
        "projected_crossing_date": "2026-12-22",
        "days_until_crossing": 16.2,
    }
    evidence = Evidence.of([json.dumps(trend_result), DETAILS])
    [trend] = evidence.trends  # the pump's details are no trend
    assert (trend.pump, trend.quantity, trend.unit, trend.window_days) == ("PUMP-007", "bearing_temperature", "°C", 30)
    assert (trend.latest, trend.minimum, trend.maximum, trend.slope_per_day) == (81.0, 72.52, 83.77, 0.247)
    assert (trend.threshold, trend.projection, trend.crossing_date, trend.days_until_crossing) == (
        85.0,
        "crosses_threshold",
        "2026-12-22",
        16.2,
    )
