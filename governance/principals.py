"""Principal names: one check and one comparison for every door (CLI `--as`/`--by`, chat, MCP, approvals).

A name says who asks or who decides; it is recorded in the audit trail and decides self-approval.
Two names that look alike on a screen must compare equal, and a name that could hide or rearrange
text on a terminal is refused. `principal_name` checks a name and puts it in its display form;
`principal_key` is what names are compared by; `show_hidden` writes the characters a name may not
hold as visible escapes, for error messages and for every screen that shows stored text.
"""

from __future__ import annotations

import unicodedata

from governance.errors import PrincipalError

MAX_PRINCIPAL_LENGTH = 100

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (bidi overrides, zero-width characters, soft hyphen), surrogate, private-use, unassigned,
line and paragraph separators: characters a terminal does not show as themselves."""
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
"""Hangul fillers: letters by category that render as nothing."""
_INVISIBLE_IN_NAMES = frozenset({"\u034f", "\u2800", *(chr(c) for c in range(0xFE00, 0xFE10))})
"""Combining grapheme joiner, braille blank, variation selectors: fine in text, invisible tricks in a name."""
_TOGETHER = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
"""Scripts one name may mix (Unicode TS #39's "highly restrictive" profile); any other mix is refused."""
_CONFUSABLE = str.maketrans(
    {  # lower case: upper-case look-alikes are caught after casefold
        "\u0430": "a",  # CYRILLIC SMALL LETTER A
        "\u0432": "b",  # CYRILLIC SMALL LETTER VE
        "\u0435": "e",  # CYRILLIC SMALL LETTER IE
        "\u0451": "e",  # CYRILLIC SMALL LETTER IO
        "\u04bb": "h",  # CYRILLIC SMALL LETTER SHHA
        "\u043d": "h",  # CYRILLIC SMALL LETTER EN
        "\u0456": "i",  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
        "\u0457": "i",  # CYRILLIC SMALL LETTER YI
        "\u0458": "j",  # CYRILLIC SMALL LETTER JE
        "\u043a": "k",  # CYRILLIC SMALL LETTER KA
        "\u04cf": "l",  # CYRILLIC SMALL LETTER PALOCHKA
        "\u043c": "m",  # CYRILLIC SMALL LETTER EM
        "\u043e": "o",  # CYRILLIC SMALL LETTER O
        "\u0440": "p",  # CYRILLIC SMALL LETTER ER
        "\u051b": "q",  # CYRILLIC SMALL LETTER QA
        "\u0455": "s",  # CYRILLIC SMALL LETTER DZE
        "\u0442": "t",  # CYRILLIC SMALL LETTER TE
        "\u0441": "c",  # CYRILLIC SMALL LETTER ES
        "\u0443": "y",  # CYRILLIC SMALL LETTER U
        "\u04af": "y",  # CYRILLIC SMALL LETTER STRAIGHT U
        "\u0445": "x",  # CYRILLIC SMALL LETTER HA
        "\u0501": "d",  # CYRILLIC SMALL LETTER KOMI DE
        "\u051d": "w",  # CYRILLIC SMALL LETTER WE
        "\u03b1": "a",  # GREEK SMALL LETTER ALPHA
        "\u03b2": "b",  # GREEK SMALL LETTER BETA
        "\u03f2": "c",  # GREEK LUNATE SIGMA SYMBOL
        "\u03b5": "e",  # GREEK SMALL LETTER EPSILON
        "\u03b7": "h",  # GREEK SMALL LETTER ETA
        "\u03b9": "i",  # GREEK SMALL LETTER IOTA
        "\u03f3": "j",  # GREEK LETTER YOT
        "\u03ba": "k",  # GREEK SMALL LETTER KAPPA
        "\u03bc": "m",  # GREEK SMALL LETTER MU
        "\u03bd": "v",  # GREEK SMALL LETTER NU
        "\u03bf": "o",  # GREEK SMALL LETTER OMICRON
        "\u03c1": "p",  # GREEK SMALL LETTER RHO
        "\u03c4": "t",  # GREEK SMALL LETTER TAU
        "\u03c5": "u",  # GREEK SMALL LETTER UPSILON
        "\u03c7": "x",  # GREEK SMALL LETTER CHI
        "\u03b3": "y",  # GREEK SMALL LETTER GAMMA
        "\u03b6": "z",  # GREEK SMALL LETTER ZETA
        "\u0131": "i",  # LATIN SMALL LETTER DOTLESS I
        "\u0251": "a",  # LATIN SMALL LETTER ALPHA
        "\u0261": "g",  # LATIN SMALL LETTER SCRIPT G
    }
)


def is_hidden(char: str) -> bool:
    """Whether a terminal would not show ``char`` as itself (a control, format or invisible character)."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or char in _BLANK_LETTERS


def show_hidden(text: str, *, keep_newlines: bool = False) -> str:
    r"""``text`` with every hidden character written as a visible escape: ESC as ``\x1b``, RLO as ``\u202e``.

    With ``keep_newlines`` a newline and a tab stay as they are (multi-line text such as an answer).
    """
    if not any(is_hidden(char) for char in text):
        return text
    return "".join(
        char if not is_hidden(char) or (keep_newlines and char in "\n\t") else _escape(char) for char in text
    )


def principal_name(raw: str, *, option: str = "--as") -> str:
    """A principal name checked and in display form: NFKC-normalized, inner spaces collapsed, trimmed.

    ``option`` is how the caller gave the name (``--as``, ``--by``), for the error message.

    Raises:
        PrincipalError: an empty or over-long name, one with a control, format or invisible character,
            or one mixing scripts (Latin with Cyrillic or Greek letters, say).
    """
    example = f"e.g. {option} 'J. Supervisor'"
    hidden = [char for char in raw if is_hidden(char) or char in _INVISIBLE_IN_NAMES]
    if hidden:
        names = ", ".join(dict.fromkeys(_describe(char) for char in hidden))
        raise PrincipalError(
            f"The name '{show_hidden(raw)[:120]}' given with {option} holds hidden characters ({names}). A name is "
            f"1-{MAX_PRINCIPAL_LENGTH} visible letters, digits, spaces and punctuation, {example}."
        )
    name = " ".join(unicodedata.normalize("NFKC", raw).split())
    if not name or len(name) > MAX_PRINCIPAL_LENGTH:
        raise PrincipalError(f"Say who you are with {option} NAME (1-{MAX_PRINCIPAL_LENGTH} characters), {example}.")
    scripts = _scripts(name)
    if len(scripts) > 1 and not any(scripts <= allowed for allowed in _TOGETHER):
        raise PrincipalError(
            f"The name {name!r} given with {option} mixes letters of {' and '.join(sorted(scripts))}, as look-alike "
            f"names do. Write it in one script, {example}."
        )
    return name


def principal_key(name: str) -> str:
    """What two names are compared by: NFKC, casefolded, hidden characters dropped, look-alike letters mapped."""
    text = "".join(c for c in unicodedata.normalize("NFKC", name) if not is_hidden(c) and c not in _INVISIBLE_IN_NAMES)
    folded = unicodedata.normalize("NFKC", text.casefold()).translate(_CONFUSABLE)
    return " ".join(folded.split())


def same_principal(first: str, second: str) -> bool:
    """Whether two principal names denote the same person (case, width, hidden characters, look-alikes ignored)."""
    return principal_key(first) == principal_key(second)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _describe(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'control character')}"


def _scripts(name: str) -> frozenset[str]:
    """The scripts of a name's letters, read from their Unicode names ("CYRILLIC SMALL LETTER A")."""
    scripts = set()
    for char in name:
        if not unicodedata.category(char).startswith("L"):
            continue  # digits, punctuation, spaces and combining marks belong to every script
        word = unicodedata.name(char, "").split(" ")[0]
        if word in {"", "MODIFIER", "KATAKANA-HIRAGANA"}:
            continue
        scripts.add("HAN" if word == "CJK" else word)
    return frozenset(scripts)
