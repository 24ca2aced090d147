"""Stored text on the terminal: printed through rich exactly as stored, never as markup or escape sequences."""

import json
from io import StringIO

from rich.console import Console

from doors.cli.safe_text import safe_json, safe_text

HOSTILE = "Grease [/] bearings; [red]the[/red] seal \x1b[2K\u202eok\x9b"


def printed(markup: str) -> str:
    buffer = StringIO()
    Console(file=buffer, width=200, color_system=None).print(markup, highlight=False)
    return buffer.getvalue()


def test_markup_in_stored_text_is_printed_as_written_and_escapes_as_visible_text() -> None:
    shown = printed(f"[bold]summary:[/] {safe_text(HOSTILE)}")
    assert shown == "summary: Grease [/] bearings; [red]the[/red] seal \\x1b[2K\\u202eok\\x9b\n"


def test_one_line_fields_cannot_fake_a_second_line_but_answers_keep_theirs() -> None:
    assert printed(safe_text("bob\nrequested by alice")) == "bob\\x0arequested by alice\n"
    assert printed(safe_text("line one\nline two", multiline=True)) == "line one\nline two\n"


def test_a_trailing_backslash_does_not_swallow_the_closing_tag() -> None:
    assert printed(f"[dim]{safe_text('C:' + chr(92))}[/] after") == "C:\\ after\n"


def test_json_for_machines_escapes_hidden_characters_and_still_parses_to_the_stored_value() -> None:
    data = {"summary": HOSTILE, "who": "caf\u00e9 \U0001f600 \U000e0041"}
    text = safe_json(data)
    assert json.loads(text) == data
    assert not any(char in text for char in "\x1b\u202e\x9b\U000e0041")
    assert "caf\u00e9 \U0001f600" in text  # visible characters stay readable
