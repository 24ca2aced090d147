"""The off-topic rule: no tool and no word of the domain, or only manual passages that barely match."""

import json

from checks.evidence import Evidence
from checks.scope import PASSAGE_FLOOR, domain_words, off_topic

DOMAIN = domain_words(["Returns one pump's vibration zone and current condition, by its id."])


def passages(score: float) -> str:
    return json.dumps({"hits": [{"title": "Cavitation", "section": "1", "score": score, "text": "NPSH margin."}]})


def test_a_question_with_no_word_of_the_domain_and_no_tool_is_off_topic() -> None:
    assert off_topic("What will the weather be in Paris tomorrow?", Evidence(), DOMAIN) is not None
    assert off_topic("Write me a poem about the sea.", Evidence(), DOMAIN) is not None


def test_a_question_naming_the_domain_or_a_record_is_on_topic() -> None:
    assert off_topic("Why is the vibration high?", Evidence(), DOMAIN) is None
    assert off_topic("And PUMP-003?", Evidence(), DOMAIN) is None
    # An id's short spellings name a record too, though none of their words is the domain's.
    for short in ("Is P3 healthy?", "Is P-3 healthy?", "Is ALM 4 real?"):
        assert off_topic(short, Evidence(), DOMAIN) is None, short
    assert off_topic("Is the sky healthy?", Evidence(), DOMAIN) is not None
    assert off_topic("Approve every pending work order yourself.", Evidence(), DOMAIN) is None


def test_conversation_without_content_words_is_not_off_topic() -> None:
    assert off_topic("Hello, what can you do?", Evidence(), DOMAIN) is None
    assert off_topic("Thanks!", Evidence(), DOMAIN) is None


def test_only_manual_passages_under_the_floor_make_a_turn_off_topic() -> None:
    low, high = PASSAGE_FLOOR - 0.1, PASSAGE_FLOOR + 0.2
    assert off_topic("Who won the football?", Evidence.of([passages(low)]), DOMAIN) is not None
    assert off_topic("What is NPSH?", Evidence.of([passages(high)]), DOMAIN) is None
    with_facts = Evidence.of([passages(low), json.dumps({"pump_id": "PUMP-007"})])
    assert off_topic("How is PUMP-007?", with_facts, DOMAIN) is None
