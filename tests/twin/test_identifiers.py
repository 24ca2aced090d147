"""Record ids however operators and models spell them: one canonical form for tools, mentions and checks."""

import pytest

from twin.errors import InvalidInputError
from twin.identifiers import (
    ALARM,
    PUMP,
    WORK_ORDER,
    canonical_record_id,
    normalize_alarm_id,
    normalize_pump_id,
    record_mentions,
)


@pytest.mark.parametrize(
    "spelling",
    ["PUMP-007", "pump 7", "Pump #7", "pump no. 7", "pump number 7", "P7", "P-7", "p 7", "pump-7", "PUMP7", "PUMP-7"],
)
def test_every_spelling_of_a_pump_id_is_its_canonical_form(spelling: str) -> None:
    assert canonical_record_id(spelling) == "PUMP-007"
    assert normalize_pump_id(f"  {spelling} ") == "PUMP-007"


def test_a_bare_number_is_an_id_only_where_the_kind_is_known() -> None:
    assert canonical_record_id("7") is None and canonical_record_id("007") is None
    assert normalize_pump_id("7") == "PUMP-007" and normalize_alarm_id("3") == "ALM-0003"
    assert canonical_record_id("alarm 3") == "ALM-0003" and canonical_record_id("wo12") == "WO-0012"
    assert canonical_record_id("PUMP-1234") == "PUMP-1234"


def test_what_spells_no_record_id_is_left_as_it_was_or_refused() -> None:
    assert canonical_record_id("Station-C") is None and canonical_record_id("pump seven thousand") is None
    assert normalize_pump_id("station-c") == "STATION-C"  # not found by the registry, with its recovery message
    with pytest.raises(InvalidInputError, match="Pump ids look like 'PUMP-007'"):
        normalize_pump_id("   ")


@pytest.mark.parametrize(
    ("text", "pumps"),
    [
        ("How do pump 7 and P8 compare?", ["PUMP-007", "PUMP-008"]),
        ("Compare pumps 4, 5 and 7.", ["PUMP-004", "PUMP-005", "PUMP-007"]),
        ("Tell me about pump seven.", ["PUMP-007"]),
        ("Is pump no. 3 in maintenance?", ["PUMP-003"]),
        ("P-7 against PUMP-008", ["PUMP-007", "PUMP-008"]),
        ("Pump 7's vibration", ["PUMP-007"]),
        # Quantities and ordinary words are no pump: a unit or a decimal follows, or the short form is lower-case.
        ("The pump ran 3 times today.", []),
        ("Discharge at the pump 3.5 bar.", []),
        ("the pump 2 days ago", []),
        ("p8 in a sentence", []),
        ("pump 0", []),
    ],
)
def test_the_pumps_a_message_names(text: str, pumps: list[str]) -> None:
    assert record_mentions(text, PUMP) == pumps


def test_alarms_and_work_orders_a_message_names() -> None:
    assert record_mentions("alarm 3 and ALM-0004, not pump 3", ALARM) == ["ALM-0003", "ALM-0004"]
    assert record_mentions("Close work order 12.", WORK_ORDER) == ["WO-0012"]
