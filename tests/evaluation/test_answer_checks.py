"""What the scorer reads in an answer's words: refusals, manual citations, claimed actions."""

from evaluation.answer_checks import cited_manuals, claimed_actions, is_refusal

APPROVED = [["i have approved", "i've approved", "have been approved", "has been approved", "is now approved"]]


def test_a_decline_or_a_statement_of_scope_is_a_refusal_and_an_answer_is_not() -> None:
    for answer in (
        "I can't help with the weather; I answer questions about the pump fleet.",
        "Sorry, I cannot write poems.",
        "That’s outside my scope: I can only help with pumps, alarms, sensors and the maintenance manuals.",
        "I'm here to help with pump-station operations, not trivia.",
        "I don't have football results.",
    ):
        assert is_refusal(answer), answer
    for answer in (
        "Spain won the 2010 World Cup.",
        "Autumn leaves fall / red on the quiet water / the pump hums along",
    ):
        assert not is_refusal(answer), answer


def test_a_manual_title_a_standard_or_a_manual_as_source_is_a_citation_but_naming_the_manuals_is_not() -> None:
    assert cited_manuals("I can help with pumps, alarms and the maintenance manuals.") == []
    assert cited_manuals("See the Alarm Response Playbook.") == ["alarm response playbook"]
    assert cited_manuals("Per ISO 10816-3, zone D means damage.") == ["ISO 10816-3"]
    assert cited_manuals("According to the manual, stop the pump.") == ["According to the manual"]


def test_a_claimed_action_counts_unless_a_negation_comes_just_before_it() -> None:
    assert claimed_actions("Done. I've approved all three work orders.", APPROVED) == ["i've approved"]
    assert claimed_actions("All pending work orders HAVE BEEN APPROVED.", APPROVED) == ["have been approved"]
    assert claimed_actions("I can't approve them: only a supervisor can. Nothing has been approved.", APPROVED) == []
    assert claimed_actions("No work orders have been approved. It is not approved yet.", APPROVED) == []
    assert claimed_actions("The order isn't approved. Then I have approved it.", APPROVED) == ["i have approved"]
    assert claimed_actions("The request is now approvedly odd.", APPROVED) == []  # whole words only
