"""An all-clear the turn's own results contradict is caught; scoped or backed reassurance is not.

Severities told against the results are listed. And the question side: a terse question after the plant's
state is told from small talk.
"""

import json
from collections.abc import Sequence

import pytest

from checks import reassurance
from checks.evidence import Evidence
from checks.reassurance import asks_for_reassurance


def overlooked_alarms(answer: str, texts: Sequence[str]) -> list[str]:
    return reassurance.overlooked_alarms(answer, Evidence.of(texts))


def misstated_severities(answer: str, texts: Sequence[str]) -> list[str]:
    return reassurance.misstated_severities(answer, Evidence.of(texts))


ALARMS = json.dumps(
    {
        "count": 3,
        "alarms": [
            {"alarm_id": "ALM-0001", "pump_id": "PUMP-007", "severity": "critical", "value": 9.4, "active": True},
            {"alarm_id": "ALM-0002", "pump_id": "PUMP-004", "severity": "high", "value": 7.8, "active": True},
            {"alarm_id": "ALM-0004", "pump_id": "PUMP-002", "severity": "low", "value": 1.0, "active": True},
            {"alarm_id": "ALM-0009", "pump_id": "PUMP-003", "severity": "critical", "active": False},
        ],
    }
)
DETAILS = json.dumps(
    {
        "pump_id": "PUMP-007",
        "status": "online",
        "active_alarms": [{"alarm_id": "ALM-0001", "severity": "critical", "value": 9.4}],
    }
)
SUMMARY = json.dumps(
    {
        "total_pumps": 8,
        "active_alarms_by_severity": {"low": 1, "medium": 2, "high": 1, "critical": 1},
        "worst_pump": {"pump_id": "PUMP-007", "highest_active_severity": "critical"},
    }
)
QUIET = json.dumps({"total_pumps": 8, "active_alarms_by_severity": {"low": 1}})
SERIOUS = ["ALM-0001 (critical on PUMP-007)", "ALM-0002 (high on PUMP-004)"]


@pytest.mark.parametrize(
    "answer",
    [
        "Everything is fine. There are 3 active alarms.",
        "The system is functioning well, with 3 active alarms listed.",
        "All pumps are running normally.",
        "Nothing wrong at the moment.",
        "We\u2019re good!",  # a typographic apostrophe
        "Everything is fine. The worst pump is PUMP-007.",  # a pump named, but not its alarm
    ],
)
def test_a_general_all_clear_over_serious_alarms_is_caught(answer: str) -> None:
    assert overlooked_alarms(answer, [ALARMS]) == SERIOUS


@pytest.mark.parametrize(
    ("scoped", "unscoped"),
    [
        ("Everything is fine except PUMP-007, which is in zone D.", "Everything is fine."),
        ("PUMP-007 is in zone D, but everything is normal.", "Everything is normal."),
        ("Apart from PUMP-007, the fleet is running normally.", "The fleet is running normally."),
        ("Otherwise everything is fine.", "Everything is fine."),
        ("PUMP-004 is in zone C and there are no other problems.", "There are no problems."),
        ("No new alarms since this morning.", "No alarms since this morning."),
        ("There are no unacknowledged alarms.", "There are no alarms."),
        ("Pump 2 has no alarms.", "The plant has no alarms."),
        ("They are running smoothly.", "We are running smoothly."),  # who "they" are is not this check's to guess
        ("The pump is running normally.", "The pumps are running normally."),  # one pump, named elsewhere
        ("Not everything is fine.", "Everything is fine."),
    ],
)
def test_a_scoped_all_clear_is_left_alone(scoped: str, unscoped: str) -> None:
    assert overlooked_alarms(unscoped, [ALARMS]) != []  # the same claim unscoped is caught
    assert overlooked_alarms(scoped, [ALARMS]) == []


@pytest.mark.parametrize(
    "answer",
    [
        "All pumps are online.",  # up is not well: a status question's answer
        "We are working on ALM-0001.",
        "There are 3 active alarms: ALM-0001 is critical on PUMP-007, ALM-0002 high on PUMP-004.",
        "No problem, happy to help.",  # politeness
    ],
)
def test_answers_that_vouch_for_nothing_are_left_alone(answer: str) -> None:
    assert overlooked_alarms(answer, [ALARMS]) == []


def test_an_alarm_the_answer_reports_is_not_overlooked() -> None:
    # By id: only the other serious alarm is passed over.
    assert overlooked_alarms("Nothing wrong; ALM-0001 was raised at midnight.", [ALARMS]) == [SERIOUS[1]]
    # By severity and pump ("No other problems" scopes the sentence anyway).
    assert overlooked_alarms("PUMP-007 has a critical alarm and no other problems.", [DETAILS]) == []
    assert overlooked_alarms("Everything is fine. PUMP-007 has a critical vibration.", [ALARMS]) == [SERIOUS[1]]
    # A count from the summary, by its severity; a denial naming a severity does not report it.
    assert overlooked_alarms("Everything is fine. One critical alarm.", [SUMMARY]) == [
        "1 high active alarm (fleet summary)"
    ]
    assert overlooked_alarms("No low alarms.", [QUIET]) == ["1 low active alarm (fleet summary)"]


def test_a_sentence_naming_pumps_speaks_for_those_pumps_only() -> None:
    assert overlooked_alarms("PUMP-002 and PUMP-006: no problems.", [ALARMS]) == []  # PUMP-002's alarm is low
    assert overlooked_alarms("PUMP-007 shows no issues.", [DETAILS]) == ["ALM-0001 (critical on PUMP-007)"]
    assert overlooked_alarms("pump-7 shows no issues.", [DETAILS]) == ["ALM-0001 (critical on PUMP-007)"]
    # A count from the summary cannot be pinned on a pump the answer names.
    assert overlooked_alarms("PUMP-001 has no issues.", [SUMMARY]) == []


def test_a_denial_of_alarms_is_contradicted_by_any_alarm_or_by_the_severities_it_names() -> None:
    assert overlooked_alarms("There are no active alarms.", [ALARMS]) == [*SERIOUS, "ALM-0004 (low on PUMP-002)"]
    assert overlooked_alarms("There are no critical alarms.", [ALARMS]) == ["ALM-0001 (critical on PUMP-007)"]
    assert overlooked_alarms("No high vibration alarms.", [ALARMS]) == [SERIOUS[1]]
    assert overlooked_alarms("Everything is fine.", [QUIET]) == []  # a low alarm does not contradict it


def test_the_summary_counts_only_what_no_listed_alarm_accounts_for() -> None:
    assert overlooked_alarms("Everything is fine.", [SUMMARY]) == [
        "1 critical active alarm (fleet summary)",
        "1 high active alarm (fleet summary)",
    ]
    # The pump's details list the critical one, so the summary adds only the high one.
    assert overlooked_alarms("Everything is fine.", [SUMMARY, DETAILS]) == [
        "ALM-0001 (critical on PUMP-007)",
        "1 high active alarm (fleet summary)",
    ]


def test_inactive_alarms_errors_and_text_results_contradict_nothing() -> None:
    resolved = json.dumps({"alarms": [{"alarm_id": "ALM-0009", "severity": "critical", "active": False}]})
    assert overlooked_alarms("Everything is fine.", [resolved, '{"error": "no such pump"}', "plain text"]) == []
    assert overlooked_alarms("Everything is fine.", []) == []
    assert overlooked_alarms("", [ALARMS]) == []
    # Each alarm is named once, however many sentences vouch.
    assert overlooked_alarms("Everything is fine. All good. No problems.", [ALARMS, DETAILS]) == SERIOUS


def test_deep_json_and_repeated_words_neither_crash_nor_hang() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert overlooked_alarms("Everything is fine.", [deep, ALARMS]) == SERIOUS
    assert overlooked_alarms("all " * 20_000 + "fine", [ALARMS]) == SERIOUS  # linear, not quadratic


@pytest.mark.parametrize(
    "question",
    [
        "Anything wrong?",
        "Is anything broken?",
        "Are there any issues?",
        "Any problem today?",
        "Hi, anything wrong with the pumps this morning?",
        "Anything I should know about?",
        "Anything we should worry about?",
        "Is everything fine?",
        "Everything good?",
        "All good?",
        "Are we OK?",
        "We good??",
        "Is everything running smoothly at the site?",
        "Everything\u2019s fine?",
        "Is the system OK right now?",
        "How are things?",
        "How's everything looking?",
        "How are we doing?",
        "What's going on?",
        "Status",
        "What's the current status?",
        "Give me a status update.",
        "Any active alarms?",
        "Any issues at all?",
        "Are all pumps OK?",
    ],
)
def test_a_terse_question_after_the_plants_state_asks_for_reassurance(question: str) -> None:
    assert asks_for_reassurance(question)


@pytest.mark.parametrize(
    "message",
    [
        "How are you?",
        "Are you OK?",
        "How's it going?",
        "What's up?",
        "Good morning!",
        "All good, thanks.",
        "Everything is fine.",  # said, not asked
        "OK, got it.",
        "Anything else?",
        "Is that everything?",
        "Is it OK if I ask something?",
        "Is everything you said correct?",
        "What's wrong with my code?",
        "Any problems at Station-C?",  # a named place: the model and relevance decide
        "Are we clear?",  # understanding, not the plant
        "How are things going?",
        "How's everything going?",
        "Is PUMP-007 OK?",
        "",
    ],
)
def test_small_talk_acknowledgements_and_scoped_questions_do_not(message: str) -> None:
    assert not asks_for_reassurance(message)


def test_a_long_repetitive_message_is_judged_quickly() -> None:
    assert not asks_for_reassurance("hi, " * 20_000 + "anything wrong")
    assert not asks_for_reassurance("anything wrong" + " today" * 20_000 + " x")
    assert not asks_for_reassurance("anything wrong" + " on site" * 40 + " x")  # was exponential: 25 s at 24


@pytest.mark.parametrize(
    ("answer", "misstated"),
    [
        ("ALM-0002 (critical) is on PUMP-004.", ["ALM-0002 is high, not critical"]),
        ("ALM-0001 is critical and ALM-0002 is low.", ["ALM-0002 is high, not low"]),
        ("ALM-0001 and ALM-0002 are critical.", ["ALM-0002 is high, not critical"]),
        ("alm-2, a medium-severity alarm on PUMP-004.", ["ALM-0002 is high, not medium"]),
        ("ALM-0009 was low.", ["ALM-0009 is critical, not low"]),  # inactive, still critical
        (
            "There are 3 active alarms, all of which are high severity.",
            ["ALM-0001 is critical, not high", "ALM-0004 is low, not high"],
        ),
        ("The critical alarm ALM-0002 is on PUMP-004.", ["ALM-0002 is high, not critical"]),
        ("PUMP-007 has a medium-severity alarm (ALM-0001).", ["ALM-0001 is critical, not medium"]),
        ("A low alarm ALM-0001 and a high alarm ALM-0002.", ["ALM-0001 is critical, not low"]),
        ("The alarms on PUMP-007 are all critical.", []),  # PUMP-007's one alarm is critical
        ("The alarms on PUMP-007 and PUMP-002 are all critical.", ["ALM-0004 is low, not critical"]),
    ],
)
def test_an_alarm_told_with_another_severity_is_listed(answer: str, misstated: list[str]) -> None:
    assert misstated_severities(answer, [ALARMS]) == misstated


@pytest.mark.parametrize(
    "answer",
    [
        "ALM-0001 is critical on PUMP-007 and ALM-0002 is high.",
        "ALM-0002 has high vibration on PUMP-004.",  # a reading, not a severity
        "ALM-0004 reports low discharge pressure.",
        "ALM-0001 is above the high limit.",
        "ALM-0002 on PUMP-004 is high, and the critical one is ALM-0001.",
        "Not all are critical: ALM-0002 is high.",
        "ALM-0006 is low.",  # not in the results: the id check flags it, not this one
        "All pumps are low on oil.",
        "The vibration readings are all high.",  # readings, not the alarms
        "Discharge pressures are all low, which explains the alarms.",
        "ALM-0001 is critical and ALM-0002 is high, while the other alarms are all low.",
        "Apart from ALM-0001, the alarms are all low.",
        "ALM-0001 means the motor temperature is high.",
        "ALM-0001 was raised because vibration was high.",
        "ALM-0004 is on PUMP-002, while PUMP-007 is critical.",
        "ALM-0001 and ALM-0002 are critical and high respectively.",
        "ALM-0002 is now high (was critical).",
        "The critical alarm ALM-0001 and the high alarm ALM-0002 are active.",
        "Besides the critical alarm, ALM-0002 is high.",  # a comma: the severity is another alarm's
        "After the critical alarm on PUMP-007, the high alarm id ALM-0002 followed.",
        "A high vibration alarm ALM-0002 on PUMP-004.",  # what was measured, not the severity
        "The highest alarm ALM-0001 is critical.",
        "The most critical alarm ALM-0002 (high) needs a look.",  # a ranking
        "The next most critical alarm ALM-0002 is high.",
        "A less critical alarm ALM-0004 is on PUMP-002.",
        "The only non-critical alarm ALM-0004 is on PUMP-002.",
        "The only non-critical alarm ALM-0002 is on PUMP-004.",
        "ALM-0004 is not a critical alarm.",
    ],
)
def test_severities_the_results_back_or_that_are_not_told_are_left_alone(answer: str) -> None:
    assert misstated_severities(answer, [ALARMS]) == []


def test_many_severity_claims_are_judged_quickly_and_odd_ids_do_not_crash() -> None:
    assert misstated_severities("all the alarms are high, " * 5_000, [ALARMS]) != []
    odd = json.dumps({"alarms": [{"alarm_id": "ALM-\u00b2", "severity": "high"}]})
    assert misstated_severities("ALM-0001 is low.", [odd]) == [] and overlooked_alarms("All fine.", [odd]) != []
