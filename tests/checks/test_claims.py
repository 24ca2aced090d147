"""What counts as an answer speaking for the plant's data without having read any (`checks.claims.data_claim`)."""

import pytest

from checks.claims import data_claim, measurement

TOOLS = ["assets-list_pumps", "assets-get_system_summary", "alarms-list_alarms", "sensors-get_sensor_trend"]


@pytest.mark.parametrize(
    ("answer", "claim"),
    [
        # Answers the 1.5B model wrote to terse fleet questions without a call (2026-12-04).
        ("No, the system is functioning well.", "the system is functioning well"),
        ("Yes, we're good.", "we're good"),
        ("Yes, we are fine.", "we are fine"),
        ("No problems. How can I assist you today?", "No problems"),
        ("Nothing wrong.", "Nothing wrong"),
        ("Everything good! Is there anything else you'd like to know?", "Everything good"),
        ("I can tell you that the pump system is running smoothly.", "the pump system is running smoothly"),
        ("Yes, everything seems to be running smoothly.", "everything seems to be running smoothly"),
        ("Thank you. I've been working on the pumps to ensure they are running smoothly.", "they are running smoothly"),
        ("None as per the most recent system summary.", "as per the most recent system summary"),
        ("Let me help you decide based on the information I have.", "based on the information"),
        ("To check today, you can use the assets-list_pumps tool to find pumps.", "assets-list_pumps"),
        ("Call the sensors-get_sensor_trend function to monitor pump readings.", "sensors-get_sensor_trend"),
        ("Check get_system_summary for the fleet.", "get_system_summary"),
        ("To know your pumps, use the assets tool.", "assets tool"),
        # Openings that slipped through the patterns above (2026-12-05, eight terse questions, seed 1).
        ("Let's find out what's wrong.", "Let's find out"),
        ("Nothing important yet. Let's start with a system check.", "Nothing important"),
        ("Nothing much to report; everything is going well.", "Nothing much"),
        ("Thanks for asking: everything is going well.", "everything is going well"),
        ("None as per the available data.", "as per the available data"),
        ("No. There are multiple pumps in maintenance.", "There are multiple pumps in maintenance"),
        ("The single worst pump is PUMP-003.", "PUMP-003"),
        ("There are 2 active alarms.", "There are 2 active alarms"),
        ("Let me check.", "Let me check"),
        ("None yet, thank you.", "None yet"),
        ("Let\u2019s find out.", "Let's find out"),
        ("We\u2019re good.", "We're good"),
        # Other state claims and denials.
        ("There are no active alarms.", "There are no active alarms"),
        ("All pumps are running normally.", "All pumps are running normally"),
        ("Everything is working fine.", "Everything is working"),
        ("Our stations are all OK.", "Our stations are all OK"),
        ("Things look stable.", "Things look stable"),
        ("Nothing's wrong at the moment.", "Nothing's wrong"),
        # Markup of a call or a result the model printed instead of making a call.
        ('<tool_call>\n{"name": "assets-list_pumps"}', "<tool_call>"),
        ("<<UNTRUSTED-DATA abcdefghij>> total: 5", "UNTRUSTED-DATA"),
    ],
)
def test_an_answer_that_speaks_for_the_plant_or_its_tools_is_a_claim(answer: str, claim: str) -> None:
    assert data_claim(answer, TOOLS) == claim


@pytest.mark.parametrize(
    "answer",
    [
        "I'm fine, thank you. How about you?",  # "I" is never the plant
        "No problem! Happy to help.",  # politeness, singular
        "You're welcome! Let me know if you need anything else.",
        "Hello! How can I assist you today?",
        "I am PumpOps, an operations assistant for pump-station operators.",
        "I can help with your queries about the pumps, alarms, and sensors.",
        "The capital of France is Paris.",
        "Why did the tomato turn red? Because it saw the salad dressing!",
        "Goodbye, have a great day!",
        "Is anything wrong?",
        "We can check that for you as well.",
        "A listing of pumps would help.",  # words of a tool name, not the name
        "Let me know if you would like me to check anything.",  # an offer
        "Let's talk about pumps! What would you like to know?",
        "Let's look at how a centrifugal pump works.",
        "Let me explain how to check a mechanical seal.",
        "There are two pumps running in parallel in a typical lift station.",
        "I have none yet, but I can learn.",  # not the opening word
        "There are many types of pumps, such as centrifugal pumps.",  # trivia, no state
        "The alarms list is long.",
    ],
)
def test_small_talk_and_general_answers_are_not_claims(answer: str) -> None:
    assert data_claim(answer, TOOLS) is None


def test_a_record_id_is_a_claim_unless_the_operator_named_it() -> None:
    assert data_claim("PUMP-003 is the worst.", TOOLS) == "PUMP-003"
    assert data_claim("ALM-0001 is still open.", TOOLS, asked="What about alm-0001?") is None
    assert data_claim("Sure, PUMP-003 it is.", TOOLS, asked="Look at PUMP-003 and PUMP-004") is None
    assert data_claim("PUMP-004 then, and PUMP-009.", TOOLS, asked="Look at PUMP-004") == "PUMP-009"


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("PUMP-005 vibrates at 3.9 mm/s.", "3.9 mm/s"),
        ("The bearing runs at 81 °C.", "81 °C"),
        ("About 88 psi.", "88 psi"),
        ("Flow is 2,380 m³/h.", "2,380 m³/h"),
        ("It draws 65 kW", "65 kW"),
    ],
)
def test_a_number_with_a_unit_of_the_plant_is_a_measurement(answer: str, found: str) -> None:
    assert measurement(answer) == found


@pytest.mark.parametrize("answer", ["PUMP-005 is online.", "Zone 3 of 4.", "I can help with 2 things.", "v1.5bar"])
def test_numbers_without_a_plant_unit_are_no_measurement(answer: str) -> None:
    assert measurement(answer) is None
