"""Identifier shapes, the ways people spell them, and the small normalisations applied before lookup or storage.

A record id has one canonical form (``PUMP-007``, ``ALM-0003``, ``WO-0012``: a prefix, a hyphen and a zero-padded
number) and the spellings operators and models use for it: ``pump 7``, ``Pump #7``, ``pump no. 7``, ``pump
seven``, ``P7``, ``P-7``, ``pump-7``, ``PUMP7``; ``alarm 3``, ``ALM 3``; ``work order 12``, ``WO12``. Every door reads
them the same way: a tool argument (`normalize_pump_id`), the ids a message names (`record_mentions`) and the
comparisons the answer checks make (`canonical_record_id`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from twin.errors import InvalidInputError

PUMP_ID_PATTERN = re.compile(r"^PUMP-\d{3,6}$")
ALARM_ID_PATTERN = re.compile(r"^ALM-\d{4,8}$")
MAX_ID_LENGTH = 64


@dataclass(frozen=True)
class RecordKind:
    """A kind of record id: its canonical prefix and width, the words that name it, its short upper-case forms."""

    prefix: str
    width: int
    words: tuple[str, ...]
    short: tuple[str, ...] = ()

    def canonical(self, number: int) -> str:
        """The canonical id of ``number``: ``PUMP-007``."""
        return f"{self.prefix}-{number:0{self.width}d}"


PUMP = RecordKind("PUMP", 3, ("pump",), ("P",))
ALARM = RecordKind("ALM", 4, ("alarm",))
WORK_ORDER = RecordKind("WO", 4, ("work order", "work-order", "workorder"))
RECORD_KINDS = (PUMP, ALARM, WORK_ORDER)

_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
# Between the name and the number: a separator, "#", "no.", "nr." or "number" ("pump no. 7", "Pump #7", "P-7").
_JOIN = r"[\s_.:-]*(?:(?:no|nr|number)\b\.?\s*)?#?\s*"
# A number followed by a decimal part or a unit is a quantity, not an id: "pump 3.5 bar", "the pump 3 times".
_NOT_QUANTITY = (
    r"(?![.,]\d)(?!\s*(?:%|°|bar\b|psi\b|kpa\b|mm\b|m\b|m3|m³|l/|gpm\b|rpm\b|hz\b|kw\b|a\b|v\b|"
    r"times\b|hours?\b|h\b|days?\b|weeks?\b|minutes?\b|min\b|s\b|seconds?\b|percent\b))"
)


def _argument_pattern(kind: RecordKind) -> re.Pattern[str]:
    names = "|".join(re.escape(n) for n in (kind.prefix, *kind.words, *kind.short))
    return re.compile(rf"^(?:{names})?{_JOIN}0*(\d{{1,8}})$", re.IGNORECASE)


def _prose_pattern(kind: RecordKind) -> re.Pattern[str]:
    words = "|".join(re.escape(w) for w in (kind.prefix, *kind.words))
    spelled = "|".join(_NUMBER_WORDS)
    named = rf"(?i:\b(?:{words})s?{_JOIN}(?:(?P<digits>\d{{1,8}})|(?P<word>{spelled})\b))"
    # Several numbers after the plural name: "pumps 4 and 7", "pumps 4, 5 or 7".
    listed = rf"(?i:\b(?:{words})s\s+(?P<listed>\d{{1,8}}(?:\s*(?:,|and|&|or|,\s*and)\s*\d{{1,8}})+))"
    # The short form only as written upper-case, glued or hyphenated: "P7", "P-7" (not "p 7" in a sentence).
    short = "|".join(re.escape(s) for s in kind.short)
    compact = rf"\b(?:{short})-?(?P<short>\d{{1,8}})\b" if kind.short else r"(?!x)x"
    return re.compile(rf"(?:{listed}|{named}|{compact})(?![\w-]){_NOT_QUANTITY}")


_ARGUMENT = {kind.prefix: _argument_pattern(kind) for kind in RECORD_KINDS}
_PROSE = {kind.prefix: _prose_pattern(kind) for kind in RECORD_KINDS}


def canonical_record_id(value: str, kind: RecordKind | None = None) -> str | None:
    """The canonical id ``value`` spells, or None when it spells none.

    With ``kind``, a bare number is an id of that kind (a ``pump_id`` of ``7`` is ``PUMP-007``); without, the value
    must name its kind (``pump 7``, ``alm-3``, ``WO12``).
    """
    text = value.strip()
    if len(text) > MAX_ID_LENGTH:
        return None
    for candidate in (kind,) if kind is not None else RECORD_KINDS:
        match = _ARGUMENT[candidate.prefix].match(text)
        if match is None or (kind is None and text[: match.start(1)].strip("#0 ") == ""):
            continue
        return candidate.canonical(int(match.group(1)))
    return None


def record_mentions(text: str, kind: RecordKind = PUMP) -> list[str]:
    """The ids of ``kind`` that ``text`` names, canonical, once each in order of first mention.

    "How do pump 7 and P8 compare?" names ``PUMP-007`` and ``PUMP-008``; "pumps 4 and 7" both; "pump seven" one;
    "the pump ran 3 times" and "pump 3.5 bar" none.
    """
    found: dict[str, None] = {}
    for match in _PROSE[kind.prefix].finditer(text):
        if match.group("listed"):
            numbers = [int(n) for n in re.findall(r"\d+", match.group("listed"))]
        elif match.group("word"):
            numbers = [_NUMBER_WORDS[match.group("word").lower()]]
        else:
            numbers = [int(match.group("digits") or match.group("short"))]
        found.update((kind.canonical(n), None) for n in numbers if n > 0)
    return list(found)


def normalize_pump_id(raw: str) -> str:
    """A pump id, canonical when ``raw`` spells one (``pump 7``, ``P-7``, ``7`` are ``PUMP-007``), else upper-cased.

    Raises:
        InvalidInputError: the value is empty or absurdly long.
    """
    value = raw.strip().upper()
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{raw[:80]!r} is not a pump id. Pump ids look like 'PUMP-007'. Call assets-list_pumps to see valid ids."
        )
    return canonical_record_id(value, PUMP) or value


def exact_record_id(raw: str, kind: RecordKind, *, name: str, listing: str) -> str:
    """The canonical id a write names: the id's own form in any case, spaces around it or zeros dropped ignored.

    A parked write binds its exact arguments and a supervisor approves what they read, so a write never takes a
    spelling a reader resolves for itself (``pump 7``, ``P7``, ``7``): ``pump-007``, `` PUMP-7 `` and ``PUMP-007``
    are ``PUMP-007``; ``pump 7`` is refused, naming the id it would be. ``name`` is the argument, ``listing`` the
    tool that lists valid ids.

    Raises:
        InvalidInputError: anything but the prefix, an optional hyphen and a number.
    """
    text = raw.strip()
    match = re.fullmatch(rf"{re.escape(kind.prefix)}-?0*(\d{{1,8}})", text, re.IGNORECASE)
    if match is not None and len(text) <= MAX_ID_LENGTH and int(match.group(1)) > 0:
        return kind.canonical(int(match.group(1)))
    example = kind.canonical(7)
    meant = canonical_record_id(text, kind) if len(text) <= MAX_ID_LENGTH else None
    meant = None if meant == kind.canonical(0) else meant
    hint = f" If you mean {meant}, call again with {name}='{meant}'." if meant else f" Call {listing} to see valid ids."
    raise InvalidInputError(
        f"{name}={raw[:80]!r} is not written as an id; a write names it exactly, like '{example}'.{hint}"
    )


def normalize_alarm_id(raw: str) -> str:
    """An alarm id, canonical when ``raw`` spells one (``alarm 3``, ``ALM-3`` are ``ALM-0003``), else upper-cased.

    Raises:
        InvalidInputError: the value is empty or absurdly long.
    """
    value = raw.strip().upper()
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{raw[:80]!r} is not an alarm id. Alarm ids look like 'ALM-0007'. "
            "Call alarms-list_alarms to see valid ids."
        )
    return canonical_record_id(value, ALARM) or value


def escape_like(value: str) -> str:
    r"""Escape LIKE wildcards so user text matches literally (use with ``ESCAPE '\'``)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def trimmed_text(raw: str, *, name: str, minimum: int, maximum: int, example: str, describing: str = "") -> str:
    """``raw`` trimmed, refused unless ``minimum``-``maximum`` characters long.

    Raises:
        InvalidInputError: too short or too long; the message names ``name``, the bounds and ``example``.
    """
    text = raw.strip()
    if not minimum <= len(text) <= maximum:
        raise InvalidInputError(f"{name} must be {minimum}-{maximum} characters{describing}, e.g. '{example}'.")
    return text
