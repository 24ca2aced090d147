"""Groundedness check: flag numbers (and record ids) in a final answer that no tool result of the turn supports.

Record ids (``PUMP-007``, ``ALM-0001``, ``WO-0001``, ``APR-1A2B3C4D``) are checked apart, by `ungrounded_ids`,
against every text the caller passes (the runner: this turn's results and the session's earlier questions and
results): an id nothing read is a record the model made up. The rules below are for numbers.

After the final answer, every number in it is looked up among the numbers of the turn's tool
results and the user's question. Numbers found nowhere are returned, as written in the answer, so
the caller can list them as ``ungrounded``. The results come as the turn's `checks.evidence.Evidence`, each
parsed once; the word lists are `checks.vocabulary`'s.

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

A grounded number can still be told of the wrong pump ("PUMP-006's bearing is at 81 °C" when 81 °C is
PUMP-007's). `misattributed_numbers` checks that, sentence by sentence, for sentences that name exactly one pump
(by id, or by a name the results give it) and compare it with nothing else ("than", "next", "other",
"respectively" …): each number of such a sentence must be supported, under the rules above, by that pump's part
of the results (every JSON object with its ``pump_id``, and all inside it), by the results' parts that belong to
no pump (fleet counts, manual passages, any text that is not JSON) or by the question; a number only other pumps'
parts support is returned with their ids. A number no result supports is `ungrounded_numbers`' and not repeated.

A grounded number can also be compared the wrong way round ("81 °C, which is above the alarm threshold of 85 °C":
both numbers are in the result, the claim is false). `misstated_comparisons` checks, sentence by sentence, a
number set against a limit: the last number before a comparing word (above, over, exceeds, beyond, higher or
greater than; below, under, lower or less than, within) and the first number after it, when a limit word stands
between them (threshold, limit, boundary, level, setpoint, maximum, minimum). A number written right before the
comparing word, with at most its unit between ("2.3 mm/s above the limit"), is a margin, not the value, and
settles nothing; so do a negation in the two words before, a percentage, and equal numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from checks.evidence import Evidence
from checks.vocabulary import (
    COMPARING_ABOVE,
    COMPARING_BELOW,
    ELSEWHERE_WORDS,
    LIMIT_WORDS,
    NUMBERING_WORDS,
    STANDARD_BODIES,
    alternation,
    choice,
)
from governance import APPROVAL_ID

__all__ = [
    "RECORD_ID",
    "SENTENCE_BREAK",
    "SMALL_INTEGER_LIMIT",
    "misattributed_numbers",
    "misstated_comparisons",
    "pump_key",
    "record_key",
    "ungrounded_ids",
    "ungrounded_numbers",
]

SMALL_INTEGER_LIMIT = 10
_FLOAT_EXPONENT = 308  # decimal exponents a float can hold; larger ones would overflow the decimal arithmetic
"""Unsigned integers from 0 up to this value, written without decimals or percent sign, always pass."""

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
class _Mention:
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


def ungrounded_numbers(answer: str, evidence: Evidence, question: str = "") -> list[str]:
    """Return the numbers in ``answer`` that neither the tool results nor the question support.

    See the module docstring for what counts as a number, what is ignored, and what counts as
    support (formatting variants, rounding to the answer's precision, percent as fraction; no
    arithmetic).

    Args:
        answer: The model's final answer for the turn.
        evidence: The turn's tool results, each parsed once (JSON is walked, other text read as text).
        question: The user's question; numbers the user gave are support too.

    Returns:
        The unsupported numbers as written in the answer (sign included, unit and percent sign
        left off), without duplicates, in order of first appearance.
    """
    mentions = list(_mentions(_mask(answer)))
    if not mentions:
        return []
    support: set[Decimal] = set()
    for result in evidence.results:
        if result.is_json:
            _add_json_support(result.data, support)
        else:
            _add_text_support(result.text, support)
    _add_text_support(question, support)
    flagged: list[str] = []
    for mention in mentions:
        if mention.text in flagged or mention.always_accepted or _is_supported(mention, support):
            continue
        flagged.append(mention.text)
    return flagged


RECORD_ID = re.compile(rf"\b(?P<kind>PUMP|ALM|WO)-(?P<number>\d{{1,8}})\b|\b{APPROVAL_ID.pattern}\b", re.IGNORECASE)
"""The registry's record ids as prose writes them: pumps, alarms, work orders and approvals."""


def ungrounded_ids(answer: str, tool_results: Sequence[str], question: str = "") -> list[str]:
    """Return the record ids in ``answer`` (`RECORD_ID`) that no tool result and not the question contains.

    An id is the same however it is cased or zero-padded (``pump-7`` is ``PUMP-007``); the results are
    read as text, so an id anywhere in them, a message included, counts. As written in the answer,
    without duplicates, in order of first appearance.
    """
    known = {record_key(m) for text in (*tool_results, question) for m in RECORD_ID.finditer(text)}
    flagged: dict[str, None] = {}
    for mention in RECORD_ID.finditer(answer):
        if record_key(mention) not in known:
            flagged[mention.group(0)] = None
    return list(flagged)


def record_key(match: re.Match[str]) -> tuple[str, str]:
    """A `RECORD_ID` match as a comparable key, whatever its case and zero-padding (``pump-7`` is ``PUMP-007``)."""
    if match.group("kind"):
        return match.group("kind").upper(), str(int(match.group("number")))
    return "APR", match.group(0).upper()


def pump_key(text: str) -> tuple[str, str] | None:
    """The `record_key` of ``text`` when it is a pump id (``PUMP-007``, `` pump-7 ``), else None."""
    match = RECORD_ID.fullmatch(text.strip())
    return record_key(match) if match is not None and (match.group("kind") or "").upper() == "PUMP" else None


SENTENCE_BREAK = re.compile(r"(?<=[.!?;])\s+|\n+")
"""Where the answer checks split an answer into sentences (or list lines)."""
_ELSEWHERE = re.compile(alternation(ELSEWHERE_WORDS), re.IGNORECASE)
"""Words that bring in something besides the one pump a sentence names (another pump, the fleet, a ranking, a
negation): its numbers may be that thing's ("PUMP-004 is at 72 °C, below the fleet maximum of 81 °C")."""


def misattributed_numbers(answer: str, evidence: Evidence, question: str = "") -> list[str]:
    """Return the numbers ``answer`` gives for one pump that the results give only for other pumps.

    See the module docstring for which sentences are judged. Each entry reads ``"81 for PUMP-006 (the results
    give it for PUMP-007)"``, the number as written in the answer; without duplicates, in order of appearance.
    """
    scopes: dict[tuple[str, str] | None, set[Decimal]] = {None: set()}
    shown: dict[tuple[str, str], str] = {}
    names: dict[str, tuple[str, str]] = {}
    for result in evidence.results:
        if result.is_json:
            _add_scoped_support(result.data, scopes, shown, names)
        else:
            _add_text_support(result.text, scopes[None])
    if len(shown) < 2:
        return []  # no other pump to confuse it with
    _add_text_support(question, scopes[None])
    flagged: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer):
        pumps = _pumps_named(sentence, names)
        if len(pumps) != 1 or _ELSEWHERE.search(sentence):
            continue
        pump = next(iter(pumps))
        if pump not in shown:
            continue  # the results hold nothing of this pump to judge by
        for mention in _mentions(_mask(sentence)):
            if mention.always_accepted or any(_is_supported(mention, scopes[k]) for k in (pump, None)):
                continue
            others = [shown[k] for k in sorted(shown) if k != pump and _is_supported(mention, scopes[k])]
            if others:
                flagged[f"{mention.text} for {shown[pump]} (the results give it for {', '.join(others)})"] = None
    return list(flagged)


_COMPARING = re.compile(
    rf"(?P<above>{alternation(COMPARING_ABOVE)})|(?P<below>{alternation(COMPARING_BELOW)})", re.IGNORECASE
)
_LIMIT = re.compile(alternation([*LIMIT_WORDS, *(w + "s" for w in LIMIT_WORDS)]), re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|never|no)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$", re.IGNORECASE)
_MARGIN_GAP = re.compile(r"^\s*[^\s,;:]{0,6}\s*$")
"""What may stand between a number and the comparing word when the number is a margin: its unit, if any."""


def misstated_comparisons(answer: str) -> list[str]:
    """Return the comparisons of a number with a limit that ``answer`` gets the wrong way round.

    See the module docstring for which comparisons are judged. Each entry reads ``"81 is not above 85"``, the
    numbers as written; without duplicates, in order of appearance.
    """
    flagged: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer):
        masked = _mask(sentence)
        numbers = list(_mentions(masked))
        for word in _COMPARING.finditer(masked):
            before = [n for n in numbers if n.end <= word.start()]
            after = [n for n in numbers if n.start >= word.end()]
            if not before or not after or _NEGATED.search(masked[: word.start()]):
                continue
            value, limit = before[-1], after[0]
            if _MARGIN_GAP.match(masked[value.end : word.start()]):
                continue
            between = masked[word.end() : limit.start]
            if not _LIMIT.search(between) or _COMPARING.search(between):
                continue  # no limit, or a later comparing word owns it ("within zone D, above the boundary of")
            if value.percent or limit.percent:
                continue
            above = word.group("above") is not None
            if (value.value < limit.value) if above else (value.value > limit.value):
                flagged[f"{value.text} is not {word.group().lower()} {limit.text}"] = None
    return list(flagged)


def _pumps_named(sentence: str, names: dict[str, tuple[str, str]]) -> set[tuple[str, str]]:
    """The pumps a sentence names, by id (`record_key`) or by a name the results give them."""
    named = {record_key(m) for m in RECORD_ID.finditer(sentence) if (m.group("kind") or "").upper() == "PUMP"}
    lowered = sentence.lower()
    named.update(key for name, key in names.items() if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", lowered))
    return named


def _add_scoped_support(
    data: object,
    scopes: dict[tuple[str, str] | None, set[Decimal]],
    shown: dict[tuple[str, str], str],
    names: dict[str, tuple[str, str]],
) -> None:
    """Walk a parsed result as `_add_json_support` does, each value into the support of the pump it belongs to."""
    stack: list[tuple[object, tuple[str, str] | None]] = [(data, None)]
    while stack:
        item, pump = stack.pop()
        if isinstance(item, dict):
            own = item.get("pump_id")
            own = own.strip() if isinstance(own, str) else ""
            if (key := pump_key(own)) is not None:
                pump = key
                shown.setdefault(pump, own)
                name = item.get("name")
                if isinstance(name, str) and name.strip():
                    names.setdefault(name.strip().lower(), pump)
            support = scopes.setdefault(pump, set())
            for key, value in item.items():
                _add_text_support(str(key), support, scopes[None])
                stack.append((value, pump))
        elif isinstance(item, list):
            stack.extend((value, pump) for value in item)
        elif isinstance(item, str):
            # A date's parts (a day, an hour) belong to no pump: every pump's readings carry timestamps.
            _add_text_support(item, scopes.setdefault(pump, set()), scopes[None])
        else:
            _add_json_support(item, scopes.setdefault(pump, set()))


def _mask(text: str, lent_parts: set[Decimal] | None = None) -> str:
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


def _mentions(masked: str) -> Iterator[_Mention]:
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
        yield _Mention(
            text=sign + body,
            value=abs(value),
            decimals=decimals,
            percent=match.group("percent") is not None,
            signed=bool(sign),
            start=match.start(),
            end=match.end(),
        )


def _add_text_support(text: str, support: set[Decimal], lent_parts: set[Decimal] | None = None) -> None:
    """Add the magnitudes of every number in a plain text to ``support``.

    The parts of its dates go to ``lent_parts`` (by default ``support`` too).
    """
    if not text:
        return
    masked = _mask(text, support if lent_parts is None else lent_parts)
    support.update(mention.value for mention in _mentions(masked))
    # Also every bare digit run, so ambiguous grouping ("[1,200]" in compact text) supports both readings.
    support.update(Decimal(run) for run in _DIGIT_RUN.findall(masked))


def _add_json_support(data: object, support: set[Decimal]) -> None:
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
            _add_text_support(item, support)
        elif isinstance(item, dict):
            for key, value in item.items():
                _add_text_support(str(key), support)
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _is_supported(mention: _Mention, support: set[Decimal]) -> bool:
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
