"""Numbers in prose and in tool results: how the answer checks read them, and what supports one.

`checks.grounding` looks every number of an answer up among the numbers of the turn's tool results and the user's
question: the answer's `mentions` (once `mask` has blanked what is not a quantity), each `is_supported` or not by
what `add_json_support` and `add_text_support` gathered from the results and the question.

Rules, in the order they apply:

1. **Not quantities, so never checked.** Before numbers are read, these spans are blanked out of
   the answer, the question and the tool results alike: URLs; ISO dates and timestamps
   (``2025-08-22``, ``2026-12-02T17:00:00Z``), numeric dates (``22/08/2025``, ``22.08.2025``),
   year-months (``2025-08``) and written dates (``22 August 2025``, ``Aug 22, 2025``); clock times
   (``17:00``, ``5 pm``); standards (``ISO 10816-3``, ``ISO 20816-3:2022``, ``API 682``,
   ``EN ISO 9906``); identifiers, i.e. a word that starts with a letter and is joined to more
   characters by ``-`` or ``_`` (``PUMP-007``, ``ALM-0001``, ``AF-400``, ``Station-C``) or letters
   glued to digits (``v1.2``, ``DN100``, ``IP55``, ``m3``); references after a numbering word
   (``Section 4.2``, ``step 3``, ``Group 12``, ``Zone 2``, ``Table 5``, ``No. 4``, ``#12``, ``§ 7``);
   list markers and section numbers at the start of a line (``1.``, ``2)``, ``(3)``, ``4.2.``);
   ordinals (``21st``); dotted version strings (``1.2.3``); and numbers beyond a float's range, which
   are the digits of an identifier (``28e8194714`` in a hex id), not quantities.
2. **Reading numbers.** Integers, decimals (``9.4``, ``.5``, ``1.2e-3``), comma thousands
   (``1,200``, ``1,200.50``) and space thousands (``1 200`` with a normal, no-break or thin space,
   only when every group after the first has exactly three digits), a leading sign (``-3.2``,
   U+2212 minus; a hyphen between two numbers, as in ``10-15``, is a range, not a sign) and an attached
   unit (``9.4mm/s``). A ``%``, ``percent`` or ``per cent`` after the number marks a percentage.
   A comma that is not clean thousands grouping separates numbers (``12,75`` is 12 and 75; decimal
   commas are not supported).
3. **Small integers pass.** An unsigned integer from 0 to 10 written without a decimal point or a
   percent sign is always accepted: such numbers are mostly counts, ordinals and list positions
   ("3 pumps", "the 2 alarms above") that a model may count itself, and flagging them would bury
   the real alarms. ``7.0`` or ``5 %`` is still checked.
4. **Support.** Every other number is grounded when its magnitude matches a number in a tool
   result or the question:

   * formatting does not matter: ``9.4`` == ``9.40``, ``1,200`` == ``1200`` == ``1200.0``;
   * rounding is allowed down to the answer's own precision: a number written with *d* decimals is
     grounded by any value within half a unit of its last digit (``8.3`` by ``8.27``, ``66`` by
     ``66.033``), but not the reverse (``8.27`` is not grounded by ``8.3``) and not beyond
     (``8.4`` is not grounded by ``8.27``);
   * a percentage ``15 %`` is also grounded by the fraction ``0.15`` (or ``0.148``);
   * signs are ignored, because prose restates them ("fell by 0.3" for a change of ``-0.3``);
     sign errors are out of scope;
   * tool results that parse as JSON are walked: numeric values count directly, strings and keys
     are read as text. Other results are read as text. Date and time spans in the results and the
     question lend their parts (year, month, day, hour, minute) as support, so "since 2024" is
     grounded by ``2024-03-01``; the digits inside identifiers and standards lend nothing, so a
     ``PUMP-1500`` does not ground "1500 m³/h".

   There is no arithmetic: a sum, a difference, a ratio or a unit conversion the model worked out
   itself shows up as ungrounded on purpose, since the tools are there to compute such figures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from checks.vocabulary import NUMBERING_WORDS, STANDARD_BODIES, choice

__all__ = [
    "SMALL_INTEGER_LIMIT",
    "Mention",
    "add_json_support",
    "add_text_support",
    "is_supported",
    "mask",
    "mentions",
]

SMALL_INTEGER_LIMIT = 10
"""Unsigned integers from 0 up to this value, written without decimals or percent sign, always pass."""
_FLOAT_EXPONENT = 308  # decimal exponents a float can hold; larger ones would overflow the decimal arithmetic

_SPACES = " \u00a0\u2009\u202f"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b\.?"
)
_ORDINAL_SUFFIX = r"(?:st|nd|rd|th)?"
_STANDARD_BODY = choice(STANDARD_BODIES)
_NUMBERING_WORDS = choice(NUMBERING_WORDS, escape=False)

# (pattern, lends_parts): spans blanked out before numbers are read; date and time spans lend their
# digit runs as support when they occur in tool results or the question.
_MASKS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile(r"\b(?:https?|ftp)://\S+", re.IGNORECASE), False),
    (
        re.compile(
            r"(?<![0-9])[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
            r"(?:[T ][0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
            r"(?![0-9])"
        ),
        True,
    ),
    (re.compile(r"(?<![0-9.])[0-9]{1,2}([/.-])[0-9]{1,2}\1[0-9]{2,4}(?![0-9])"), True),
    (re.compile(r"(?<![0-9.])[0-9]{4}/[0-9]{1,2}/[0-9]{1,2}(?![0-9])"), True),
    (re.compile(r"(?<![0-9.,-])[0-9]{4}-(?:0[1-9]|1[0-2])(?![0-9.,-])"), True),
    (re.compile(rf"\b[0-9]{{1,2}}{_ORDINAL_SUFFIX}[{_SPACES}]+{_MONTH}(?:,?[{_SPACES}]+[0-9]{{4}}\b)?"), True),
    (re.compile(rf"\b{_MONTH}[{_SPACES}]+[0-9]{{1,2}}{_ORDINAL_SUFFIX}\b(?:,?[{_SPACES}]+[0-9]{{4}}\b)?"), True),
    (re.compile(rf"\b{_MONTH}[{_SPACES}]+[0-9]{{4}}\b"), True),
    (
        re.compile(
            r"(?<![0-9.])[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?![0-9])(?:[ ]?(?:[ap]\.?m\.?)(?![a-z]))?",
            re.IGNORECASE,
        ),
        True,
    ),
    (re.compile(r"(?<![0-9.])[0-9]{1,2}[ ]?(?:am|pm|a\.m\.|p\.m\.)(?![a-z])", re.IGNORECASE), True),
    (
        re.compile(rf"\b{_STANDARD_BODY}(?:[/ ]{_STANDARD_BODY})*[ \u00a0]?[0-9]+(?:[-.:/][0-9]+)*(?:[A-Z]\b)?"),
        False,
    ),
    (re.compile(r"\b[A-Za-z]+[0-9][A-Za-z0-9]*(?:[-_.:/][A-Za-z0-9]+)*"), False),
    (re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+"), False),
    (
        re.compile(
            rf"(?:\b(?:{_NUMBERING_WORDS})|(?<![\w#])#|§)[{_SPACES}]*[0-9]+(?:\.[0-9]+)*[a-z]?\b",
            re.IGNORECASE,
        ),
        False,
    ),
    (
        re.compile(
            r"^[ \t]*(?:[-*+>][ \t]+)?(?:#+[ \t]*)?\**\(?[0-9]{1,3}(?:\.[0-9]{1,3})*[.)]\**(?=\s)", re.MULTILINE
        ),
        False,
    ),
    (re.compile(r"(?<![\w.])[0-9]+(?:st|nd|rd|th)\b", re.IGNORECASE), False),
    (re.compile(r"(?<![\w.])[0-9]+(?:\.[0-9]+){2,}(?![0-9])"), False),
)

_NUMBER = re.compile(
    r"(?<![\w.])"
    r"(?P<sign>[-+\u2212])?"
    r"(?P<body>"
    r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?"
    rf"|[0-9]{{1,3}}(?:[{_SPACES}][0-9]{{3}})+(?:\.[0-9]+)?"
    r"|[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9]+"
    r")"
    r"(?![0-9]|\.[0-9])"
    rf"(?P<percent>[{_SPACES}]?(?:%|percent\b|per cent\b))?",
    re.IGNORECASE,
)
_DIGIT_RUN = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_GROUPING = re.compile(rf"[,{_SPACES}]")


@dataclass(frozen=True)
class Mention:
    """A number as written in a text, with its value, precision and place (``start``, ``end``) in that text."""

    text: str
    value: Decimal
    decimals: int
    percent: bool
    signed: bool
    start: int
    end: int

    @property
    def always_accepted(self) -> bool:
        """Whether this is a small unsigned integer that passes without support (rule 3)."""
        return not self.signed and not self.percent and self.decimals == 0 and self.value <= SMALL_INTEGER_LIMIT


def mask(text: str, lent_parts: set[Decimal] | None = None) -> str:
    """Blank out the spans of rule 1, adding the digit runs of date and time spans to ``lent_parts``."""
    for pattern, lends_parts in _MASKS:
        chars: list[str] | None = None
        for match in pattern.finditer(text):
            if chars is None:
                chars = list(text)
            start, end = match.span()
            chars[start:end] = " " * (end - start)
            if lends_parts and lent_parts is not None:
                lent_parts.update(Decimal(run) for run in _DIGIT_RUN.findall(match.group()))
        if chars is not None:
            text = "".join(chars)
    return text


def mentions(masked: str) -> Iterator[Mention]:
    """Yield the numbers of an already masked text (rule 2)."""
    for match in _NUMBER.finditer(masked):
        body = match.group("body")
        try:
            value = Decimal(_GROUPING.sub("", body))
        except InvalidOperation:  # pragma: no cover - the pattern only admits valid literals
            continue
        if not value.is_finite():  # pragma: no cover - as above
            continue
        if abs(value.adjusted()) > _FLOAT_EXPONENT:
            continue  # beyond any float: the digits of an identifier (a hex id like 28e8194714e3), not a quantity
        sign = match.group("sign") or ""
        exponent = value.as_tuple().exponent
        decimals = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        yield Mention(
            text=sign + body,
            value=abs(value),
            decimals=decimals,
            percent=match.group("percent") is not None,
            signed=bool(sign),
            start=match.start(),
            end=match.end(),
        )


def add_text_support(text: str, support: set[Decimal], lent_parts: set[Decimal] | None = None) -> None:
    """Add the magnitudes of every number in a plain text to ``support``.

    The parts of its dates go to ``lent_parts`` (by default ``support`` too).
    """
    if not text:
        return
    masked = mask(text, support if lent_parts is None else lent_parts)
    support.update(mention.value for mention in mentions(masked))
    # Also every bare digit run, so ambiguous grouping ("[1,200]" in compact text) supports both readings.
    support.update(Decimal(run) for run in _DIGIT_RUN.findall(masked))


def add_json_support(data: object, support: set[Decimal]) -> None:
    """Walk a parsed JSON value: numbers count directly, strings and keys are read as text."""
    stack: list[object] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            support.add(abs(Decimal(item)))
        elif isinstance(item, float):
            if math.isfinite(item):
                support.add(abs(Decimal(repr(item))))
        elif isinstance(item, str):
            add_text_support(item, support)
        elif isinstance(item, dict):
            for key, value in item.items():
                add_text_support(str(key), support)
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def is_supported(mention: Mention, support: set[Decimal]) -> bool:
    """Whether a support value equals the mention, or rounds to it at the mention's precision (rule 4)."""
    target = mention.value
    if target in support or (mention.percent and target / 100 in support):
        return True
    tolerance = Decimal(5).scaleb(-(mention.decimals + 1))
    for value in support:
        if abs(value - target) <= tolerance:
            return True
        if mention.percent and abs(value * 100 - target) <= tolerance:
            return True
    return False
