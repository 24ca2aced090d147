"""What a local model's turn still needs after its first results (`chat.local.follow_up`; no model needed)."""

from typing import Any

import pytest

from tests.chat.local.test_grammar import TOOLS, WORK_ORDERS
from turn.follow_up import asked_reads, asks_the_manuals, holds_word, unasked_values

DETAILS: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "assets-get_pump_details",
        "parameters": {"type": "object", "properties": {"pump_id": {"type": "string"}}, "required": ["pump_id"]},
    },
}


@pytest.mark.parametrize(
    ("made", "message", "expected"),
    [
        # The eval's parallel questions the local model answered with one call.
        (
            [("assets-get_pump_details", {"pump_id": "PUMP-001"})],
            "How are PUMP-001 and PUMP-002 doing?",
            ("pump_id", ("PUMP-002",)),
        ),
        (
            [("sensors-get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "vibration"})],
            "For PUMP-007, show both the vibration trend and the flow trend.",
            ("sensor_type", ("flow",)),
        ),
        # The operator's spelling: a record id is asked for and compared in its canonical form.
        (
            [("assets-get_pump_details", {"pump_id": "PUMP-004"})],
            "compare pump-004 with pump-007 and PUMP-004's twin",
            ("pump_id", ("PUMP-007",)),
        ),
        (
            [("assets-get_pump_details", {"pump_id": "pump 4"})],
            "How do pump 4 and P8 compare?",
            ("pump_id", ("PUMP-008",)),
        ),
        # Everything named was asked for, or the calls used no such parameter.
        ([("assets-get_pump_details", {"pump_id": "PUMP-007"})], "How is PUMP-007 at Station-C?", None),
        ([("assets-get_system_summary", {})], "Status of PUMP-006 and PUMP-008?", None),
        (
            [
                ("assets-get_pump_details", {"pump_id": "PUMP-001"}),
                ("assets-get_pump_details", {"pump_id": "PUMP-002"}),
            ],
            "How are PUMP-001 and PUMP-002 doing?",
            None,
        ),
        # A word before another enum value only qualifies it: "low flow" names no severity.
        ([("alarms-list_alarms", {"severity": "critical"})], "Critical alarms on pumps with low flow?", None),
        ([("alarms-list_alarms", {"severity": "critical"})], "Critical and low alarms?", ("severity", ("low",))),
    ],
)
def test_unasked_values_are_the_ones_named_for_a_parameter_the_turns_calls_used(
    made: list[tuple[str, dict[str, Any]]], message: str, expected: tuple[str, tuple[str, ...]] | None
) -> None:
    found = unasked_values(made, message, [*TOOLS, DETAILS])
    assert (None if found is None else (found.parameter, found.values)) == expected


@pytest.mark.parametrize(
    "message",
    [
        "PUMP-007's vibration is high: what zone is it in and what does the manual say to do?",
        "What vibration does PUMP-004 have, and what do the manuals say about operating in that zone?",
        "Why is PUMP-006 offline and what does the playbook say about low discharge pressure?",
        "Is PUMP-003 ready to start? Follow the start-up procedure.",
        "What does the documentation say about seal flushing?",
    ],
)
def test_a_message_naming_the_manuals_asks_them(message: str) -> None:
    assert asks_the_manuals(message)


@pytest.mark.parametrize(
    "message",
    [
        "Is PUMP-003 in manual mode?",
        "Was PUMP-006 stopped manually?",
        "Switch PUMP-002 to manual control?",
        "How are PUMP-001 and PUMP-002 doing?",
        "What are common causes of bearing overheating?",
    ],
)
def test_a_message_that_names_no_document_does_not(message: str) -> None:
    assert not asks_the_manuals(message)


WORDS = {"work_orders-list_work_orders": ("work order", "ticket")}


def test_a_read_named_by_its_words_that_the_calls_left_out_is_asked_for_with_the_values_named() -> None:
    tools = [*TOOLS, WORK_ORDERS]
    made: list[tuple[str, dict[str, Any]]] = [("alarms-list_alarms", {"pump_id": "PUMP-007"})]
    asked = asked_reads(made, "Alarms on PUMP-007, and does it have open work-orders?", tools, WORDS, ["PUMP-007"])
    assert asked == [("work_orders-list_work_orders", {"status": "open", "pump_id": "PUMP-007"})]
    # No pump named: one fleet-wide call; no enum value named: none passed.
    assert asked_reads(made, "Any tickets?", tools, WORDS, []) == [("work_orders-list_work_orders", {})]
    # Made already, a message without its words, or a tool the model is not offered: nothing.
    listed = [*made, ("work_orders-list_work_orders", {})]
    assert asked_reads(listed, "And the work orders?", tools, WORDS, []) == []
    assert asked_reads(made, "Which pumps are worse?", tools, WORDS, []) == []
    assert asked_reads(made, "Any tickets?", TOOLS, WORDS, []) == []


def test_a_words_match_starts_at_a_word_and_reads_hyphens_as_spaces() -> None:
    assert holds_word("Acknowledge it", ("acknowledg",)) and holds_word("two work-orders", ("work order",))
    assert not holds_word("a packet", ("ticket", "ack"))
