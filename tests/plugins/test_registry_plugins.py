"""The read plugins through kernel.invoke on a temp database with the sample fleet."""

import pytest
from semantic_kernel.exceptions import KernelInvokeException

from tests.plugins.conftest import Invoke


async def test_system_summary_counts_and_names_the_worst_pump(invoke: Invoke) -> None:
    summary = await invoke("assets-get_system_summary")
    assert summary["total_pumps"] == 8
    assert summary["pumps_by_status"] == {"online": 6, "offline": 1, "maintenance": 1}
    assert summary["active_alarms_by_severity"] == {"low": 1, "medium": 2, "high": 1, "critical": 1}
    assert summary["worst_pump"]["pump_id"] == "PUMP-007"
    assert summary["worst_pump"]["highest_active_severity"] == "critical"


async def test_list_pumps_filters_by_status_and_station(invoke: Invoke) -> None:
    result = await invoke("assets-list_pumps", status="online", location="station-c")
    assert [p["pump_id"] for p in result["pumps"]] == ["PUMP-005", "PUMP-007"]
    assert result["count"] == 2 and result["truncated"] is False
    every = await invoke("assets-list_pumps")
    assert every["count"] == 8


async def test_like_wildcards_in_location_match_literally(invoke: Invoke) -> None:
    for pattern in ("%", "_", "Station-%", "\\"):
        result = await invoke("assets-list_pumps", location=pattern)
        assert result["count"] == 0, pattern


async def test_pump_details_names_its_subject_and_zone(invoke: Invoke) -> None:
    details = await invoke("assets-get_pump_details", pump_id="pump-004")
    assert details["pump_id"] == "PUMP-004"
    assert details["vibration_zone"]["zone"] == "C"
    assert {r["sensor_type"] for r in details["latest_readings"]} == {
        "vibration",
        "bearing_temperature",
        "flow",
        "discharge_pressure",
        "motor_current",
    }


@pytest.mark.parametrize("spelling", ["pump 4", "P4", "P-004", "4", "Pump #4"])
async def test_the_tools_take_a_pump_id_however_spelled(invoke: Invoke, spelling: str) -> None:
    assert (await invoke("assets-get_pump_details", pump_id=spelling))["pump_id"] == "PUMP-004"
    alarms = await invoke("alarms-list_alarms", pump_id=spelling)
    assert [a["alarm_id"] for a in alarms["alarms"]] == ["ALM-0002"]


async def test_unknown_pump_gets_a_recovery_instruction(invoke: Invoke) -> None:
    with pytest.raises(KernelInvokeException) as info:
        await invoke("assets-get_pump_details", pump_id="pump A7")
    message = str(info.value.__cause__)
    assert "No pump found with id 'pump A7'" in message
    assert "PUMP-007" in message and "assets-list_pumps" in message


async def test_list_alarms_filters_and_orders_most_severe_first(invoke: Invoke) -> None:
    active = await invoke("alarms-list_alarms")
    assert [a["severity"] for a in active["alarms"]] == ["critical", "high", "medium", "medium", "low"]
    history = await invoke("alarms-list_alarms", pump_id="PUMP-007", active_only="false")
    assert history["count"] == 3 and {a["pump_id"] for a in history["alarms"]} == {"PUMP-007"}
    critical = await invoke("alarms-list_alarms", severity="critical")
    assert [a["alarm_id"] for a in critical["alarms"]] == ["ALM-0001"]


async def test_a_bad_enum_value_is_refused_with_the_valid_values(invoke: Invoke) -> None:
    with pytest.raises(KernelInvokeException) as info:
        await invoke("alarms-list_alarms", severity="urgent")
    assert "use one of low, medium, high, critical" in str(info.value.__cause__)


async def test_sensor_readings_rank_worst_first_by_the_sensors_bad_direction(invoke: Invoke) -> None:
    vibration = await invoke("sensors-get_sensor_readings", sensor_type="vibration")
    values = [r["value"] for r in vibration["readings"]]
    assert values == sorted(values, reverse=True) and vibration["readings"][0]["pump_id"] == "PUMP-007"
    assert vibration["readings"][0]["iso_zone"] == "D"
    flow = await invoke("sensors-get_sensor_readings", sensor_type="flow")
    flows = [r["value"] for r in flow["readings"]]
    assert flows == sorted(flows) and flow["order"] == "lowest first"


async def test_sensor_readings_min_value_and_pump_filters(invoke: Invoke) -> None:
    high = await invoke("sensors-get_sensor_readings", sensor_type="vibration", min_value="7.0")
    assert [r["pump_id"] for r in high["readings"]] == ["PUMP-007", "PUMP-004"]
    one = await invoke("sensors-get_sensor_readings", sensor_type="vibration", pump_id="PUMP-001")
    assert one["count"] == 1 and one["readings"][0]["value"] == 2.1


async def test_trend_of_a_drifting_pump_rises_and_is_already_beyond_its_threshold(invoke: Invoke) -> None:
    trend = await invoke("sensors-get_sensor_trend", pump_id="PUMP-007", sensor_type="vibration", days=30)
    assert trend["slope_per_day"] > 0
    assert trend["latest"] == 9.4 and trend["max"] >= 9.4 > trend["min"]
    assert trend["projection"] == "already_beyond_threshold"
    assert trend["readings"] == 121


async def test_trend_rejects_a_window_outside_one_to_365_days(invoke: Invoke) -> None:
    with pytest.raises(KernelInvokeException) as info:
        await invoke("sensors-get_sensor_trend", pump_id="PUMP-007", sensor_type="vibration", days=0)
    assert "between 1 and 365" in str(info.value.__cause__)


async def test_rising_bearing_temperature_of_pump_007_crosses_its_alarm_within_30_days(invoke: Invoke) -> None:
    trend = await invoke("sensors-get_sensor_trend", pump_id="PUMP-007", sensor_type="bearing_temperature")
    assert trend["projection"] == "crosses_threshold"
    assert 0 < trend["days_until_crossing"] <= 30
    assert trend["projected_crossing_date"] > trend["window_end"][:10]


async def test_a_flat_sensor_is_not_projected_to_cross(invoke: Invoke) -> None:
    trend = await invoke("sensors-get_sensor_trend", pump_id="PUMP-001", sensor_type="motor_current", days=90)
    assert trend["projection"] in {"not_trending_toward_threshold", "not_within_a_year"}
    assert trend["projected_crossing_date"] is None
