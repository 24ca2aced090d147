"""Groundedness check: flag numbers in a final answer that no tool result of the turn supports.

Record ids are checked apart (`checks.record_ids.ungrounded_ids`). After the final answer, every number in it is
looked up among the numbers of the turn's tool results and the user's question. Numbers found nowhere are returned,
as written in the answer, so the caller can list them as ``ungrounded``. The results come as the turn's
`checks.evidence.Evidence`, each parsed once; the word lists are `checks.vocabulary`'s. What counts as a number, what
is ignored, and what counts as support are the rules of `checks.numbers` (formatting variants, rounding to the
answer's precision, percent as fraction; no arithmetic).

A grounded number can still be told of the wrong pump ("PUMP-006's bearing is at 81 °C" when 81 °C is
PUMP-007's). `misattributed_numbers` checks that, sentence by sentence, for sentences that name exactly one pump
(by id, or by a name the results give it) and compare it with nothing else ("than", "next", "other",
"respectively" …): each number of such a sentence must be supported, under the rules of `checks.numbers`, by that
pump's part of the results (every JSON object with its ``pump_id``, and all inside it), by the results' parts that
belong to no pump (fleet counts, manual passages, any text that is not JSON) or by the question; a number only
other pumps' parts support is returned with their ids. A number no result supports is `ungrounded_numbers`' and
not repeated.

A grounded number can also be compared the wrong way round ("81 °C, which is above the alarm threshold of 85 °C":
both numbers are in the result, the claim is false). `misstated_comparisons` checks, sentence by sentence, a
number set against a limit: the last number before a comparing word (above, over, exceeds, beyond, higher or
greater than; below, under, lower or less than, within) and the first number after it, when a limit word stands
between them (threshold, limit, boundary, level, setpoint, maximum, minimum). A number written right before the
comparing word, with at most its unit between ("2.3 mm/s above the limit"), is a margin, not the value, and
settles nothing; so do a negation in the two words before, a percentage, and equal numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

from checks.evidence import Evidence
from checks.numbers import add_json_support, add_text_support, is_supported, mask, mentions
from checks.record_ids import RECORD_ID, pump_key, record_key
from checks.vocabulary import COMPARING_ABOVE, COMPARING_BELOW, ELSEWHERE_WORDS, LIMIT_WORDS, alternation

__all__ = [
    "SENTENCE_BREAK",
    "misattributed_numbers",
    "misstated_comparisons",
    "ungrounded_numbers",
]


def ungrounded_numbers(
    answer: str, evidence: Evidence, question: str = "", read_texts: Sequence[str] = ()
) -> list[str]:
    """Return the numbers in ``answer`` that neither the tool results, the question nor what else was read support.

    See `checks.numbers` for what counts as a number, what is ignored, and what counts as
    support (formatting variants, rounding to the answer's precision, percent as fraction; no
    arithmetic).

    Args:
        answer: The model's final answer for the turn.
        evidence: The turn's tool results, each parsed once (JSON is walked, other text read as text).
        question: The user's question; numbers the user gave are support too.
        read_texts: What else the session read (the operator's messages, earlier turns' results), read as text: a
            follow-up may restate a value an earlier turn read, as it may name a record id one read.

    Returns:
        The unsupported numbers as written in the answer (sign included, unit and percent sign
        left off), without duplicates, in order of first appearance.
    """
    found = list(mentions(mask(answer)))
    if not found:
        return []
    support: set[Decimal] = set()
    for result in evidence.results:
        if result.is_json:
            add_json_support(result.data, support)
        else:
            add_text_support(result.text, support)
    for text in (question, *read_texts):
        add_text_support(text, support)
    flagged: list[str] = []
    for mention in found:
        if mention.text in flagged or mention.always_accepted or is_supported(mention, support):
            continue
        flagged.append(mention.text)
    return flagged


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
            add_text_support(result.text, scopes[None])
    if len(shown) < 2:
        return []  # no other pump to confuse it with
    add_text_support(question, scopes[None])
    flagged: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer):
        pumps = _pumps_named(sentence, names)
        if len(pumps) != 1 or _ELSEWHERE.search(sentence):
            continue
        pump = next(iter(pumps))
        if pump not in shown:
            continue  # the results hold nothing of this pump to judge by
        for mention in mentions(mask(sentence)):
            if mention.always_accepted or any(is_supported(mention, scopes[k]) for k in (pump, None)):
                continue
            others = [shown[k] for k in sorted(shown) if k != pump and is_supported(mention, scopes[k])]
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
        masked = mask(sentence)
        numbers = list(mentions(masked))
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
    """Walk a parsed result as `add_json_support` does, each value into the support of the pump it belongs to."""
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
                add_text_support(str(key), support, scopes[None])
                stack.append((value, pump))
        elif isinstance(item, list):
            stack.extend((value, pump) for value in item)
        elif isinstance(item, str):
            # A date's parts (a day, an hour) belong to no pump: every pump's readings carry timestamps.
            add_text_support(item, scopes.setdefault(pump, set()), scopes[None])
        else:
            add_json_support(item, scopes.setdefault(pump, set()))
