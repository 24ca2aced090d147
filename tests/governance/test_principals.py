"""Principal names: look-alikes compare equal, names that hide text are refused, every door uses one check."""

import pytest

from governance import PrincipalError, principal_key, principal_name, same_principal, show_hidden

LOOK_ALIKES = {
    "zero-width space": "alice\u200b",
    "fullwidth letters": "\uff41\uff4c\uff49\uff43\uff45",
    "Cyrillic a": "\u0430lice",
    "soft hyphen": "alice\u00ad",
    "right-to-left override": "\u202ealice",
}


@pytest.mark.parametrize("name", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_every_look_alike_of_alice_compares_as_alice(name: str) -> None:
    assert same_principal(name, "alice")
    assert same_principal(name, " Alice ")


@pytest.mark.parametrize("name", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_a_look_alike_is_refused_or_becomes_the_plain_name(name: str) -> None:
    try:
        checked = principal_name(name, option="--by")
    except PrincipalError as exc:
        assert "--by 'J. Supervisor'" in str(exc)  # says what a valid name looks like
        assert not any(char in str(exc) for char in "\u200b\u00ad\u202e")  # and shows the name visibly
        return
    assert checked == "alice"


def test_a_name_with_a_terminal_escape_is_refused_naming_the_character_visibly() -> None:
    with pytest.raises(PrincipalError) as refused:
        principal_name("mallory\x1b[2Kbob", option="--as")
    message = str(refused.value)
    assert "'mallory\\x1b[2Kbob'" in message and "U+001B" in message and "\x1b" not in message
    assert "1-100 visible letters" in message and "--as 'J. Supervisor'" in message


def test_a_name_mixing_latin_with_cyrillic_or_greek_is_refused_but_one_script_names_are_fine() -> None:
    for mixed in ("\u0430lice", "b\u03bfb", "J. Sup\u0435rvisor"):
        with pytest.raises(PrincipalError, match="mixes letters of"):
            principal_name(mixed)
    for fine in (
        "J. Supervisor",
        "O'Brien",
        "Jos\u00e9 M\u00fcller",
        "\u0421\u0435\u0440\u0433\u0435\u0439",
        "\u7530\u4e2d Taro",
    ):
        assert principal_name(fine) == fine


def test_names_are_trimmed_collapsed_and_width_normalized() -> None:
    assert principal_name("  J.\u00a0 Supervisor ") == "J. Supervisor"
    assert principal_name("\uff2a. Supervisor") == "J. Supervisor"
    assert principal_key("J.  SUPERVISOR") == principal_key("j. supervisor")


def test_empty_and_over_long_names_are_refused_with_the_option_named() -> None:
    for bad in ("", "   ", "x" * 101):
        with pytest.raises(PrincipalError, match="--by NAME"):
            principal_name(bad, option="--by")


def test_whole_script_look_alikes_compare_equal_and_different_people_do_not() -> None:
    assert same_principal("\u0441\u043e\u0440\u0435", "cope")  # all Cyrillic, looks like "cope"
    assert not same_principal("alice", "alicia")
    assert not same_principal("bob", "alice")


def test_hidden_characters_are_shown_as_visible_escapes() -> None:
    assert show_hidden("a\x1b[2Kb\u202ec\u200bd\x9be\n") == "a\\x1b[2Kb\\u202ec\\u200bd\\x9be\\x0a"
    assert show_hidden("line one\n\tline two", keep_newlines=True) == "line one\n\tline two"
    assert show_hidden("plain [red] text") == "plain [red] text"
