"""Units the operator asks for: converted by code beside the registry's values (`turn.units`)."""

import json

import pytest

from turn.units import asked_conversions, convert_result


@pytest.mark.parametrize(
    ("message", "targets"),
    [
        ("What is PUMP-001's discharge pressure in psi?", ["psi"]),
        ("Bearing temperature in Fahrenheit, please", ["°F"]),
        ("vibration in inches per second", ["in/s"]),
        ("How many gallons per minute is it moving? And in L/s?", ["US gpm", "L/s"]),
        ("What is PUMP-001's discharge pressure?", []),
        ("Any tips for the seal?", []),  # "ips" only as a word
    ],
)
def test_the_units_a_message_asks_for(message: str, targets: list[str]) -> None:
    assert [c.target for c in asked_conversions(message)] == targets


def test_absolute_values_in_the_source_unit_get_their_conversion_beside_them() -> None:
    result = {
        "pump_id": "PUMP-007",
        "latest_readings": [
            {"sensor_type": "bearing_temperature", "value": 81.0, "unit": "°C", "alarm_threshold": 85.0},
            {"sensor_type": "vibration", "value": 9.4, "unit": "mm/s"},
        ],
        "trend": {"unit": "°C", "latest": 81.0, "slope_per_day": 0.5},
    }
    converted = json.loads(convert_result(json.dumps(result), asked_conversions("in Fahrenheit")))
    bearing, vibration = converted["latest_readings"]
    assert bearing["value_f"] == 177.8 and bearing["alarm_threshold_f"] == 185.0 and bearing["value"] == 81.0
    assert "value_f" not in vibration  # another unit
    assert converted["trend"]["latest_f"] == 177.8 and "slope_per_day_f" not in converted["trend"]  # a rate: no offset


def test_results_without_the_unit_or_not_json_are_unchanged() -> None:
    conversions = asked_conversions("in psi")
    for text in ('{"pump_id": "PUMP-001", "status": "online"}', "not json", '{"value": 6.1, "unit": "m³/h"}'):
        assert convert_result(text, conversions) == text
    assert convert_result('{"value": 6.1, "unit": "bar"}', ()) == '{"value": 6.1, "unit": "bar"}'
