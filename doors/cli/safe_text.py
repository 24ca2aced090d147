r"""Stored text made safe for the terminal: what a supervisor reads is exactly what is stored.

Work-order summaries, alarm messages, principal names, session ids, model answers and error messages
all reach rich consoles that read ``[...]`` as markup and pass escape sequences to the terminal. Every
renderer puts such text through `safe_text` and prints with markup on, so ``Grease [/] bearings`` is
shown as written (not a crash), ``[red]the[/red]`` is not shown as "the", and an escape sequence, a
bidi override or a zero-width character is shown as ``\x1b``, ``\u202e``, ``\u200b``. JSON for
machines goes through `safe_json`. The consoles also have emoji codes off (``:warning:`` stays text).
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape

from governance.principals import is_hidden, show_hidden


def safe_text(value: object, *, multiline: bool = False) -> str:
    """``value`` as rich markup that prints exactly as stored: markup escaped, hidden characters as escapes.

    With ``multiline`` newlines and tabs are kept (an answer); otherwise they too are shown as escapes, so a
    one-line field cannot fake a second line.
    """
    return escape(show_hidden(str(value), keep_newlines=multiline))


def safe_json(data: Any) -> str:
    r"""Indented JSON with every hidden character escaped as ``\uXXXX`` (JSON escapes only C0 controls itself)."""
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    # Outside strings JSON holds only spaces and newlines, so every hidden character here is inside a string.
    return "".join(_json_escape(char) if char != "\n" and is_hidden(char) else char for char in text)


def _json_escape(char: str) -> str:
    r"""``char`` as a JSON ``\u`` escape (a surrogate pair beyond the BMP)."""
    return json.dumps(char, ensure_ascii=True)[1:-1]
