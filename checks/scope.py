"""Off-topic questions: weather, trivia and poems get a short scoped refusal, never a manual passage.

The rule, model-agnostic and fitted to no question set. A question is off-topic when either

* **no tool ran in the turn** and the question names no record id, however spelled (``PUMP-007``, ``P7``, ``pump
  seven``: `twin.identifiers.record_mentions`), and none of its words (letters, three or more,
  less `checks.vocabulary.FUNCTION_WORDS`, a plural's ``s`` dropped) is a word of the domain: the advertised
  tools' descriptions (the caller passes them), `checks.vocabulary.DOMAIN_TERMS`, and what the session read
  before (the operator's earlier messages, earlier tool results). A message with no such word at all ("Hello,
  what can you do?", "Thanks", "Why?") is conversation, not a question about something else, and passes; or
* **the turn's only evidence is manual passages** (no record, reading, alarm or action) and the best passage's
  similarity to the question is under `PASSAGE_FLOOR` (0.35, cosine of MiniLM embeddings: the manuals index
  measures questions about pumps and the manuals' subjects at 0.55 and more, small talk and trivia at 0.28 and
  less; the floor sits between the two bands).

The turn then answers `REFUSAL` in place of the model's answer.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from checks.evidence import Evidence
from checks.record_ids import RECORD_ID
from checks.vocabulary import DOMAIN_TERMS, FUNCTION_WORDS
from twin.identifiers import RECORD_KINDS, record_mentions

__all__ = ["PASSAGE_FLOOR", "REFUSAL", "domain_words", "off_topic"]

REFUSAL = "I answer questions about this plant's pumps, alarms and manuals."
PASSAGE_FLOOR = 0.35
_WORD = re.compile(r"[a-z]{3,}")


def domain_words(texts: Iterable[str]) -> frozenset[str]:
    """The words of ``texts`` (tool descriptions, earlier messages) with `DOMAIN_TERMS`, as `off_topic` reads them."""
    words = _content_words(" ".join(DOMAIN_TERMS))
    for text in texts:
        words.update(_content_words(text))
    return frozenset(words)


def off_topic(question: str, evidence: Evidence, domain: Collection[str]) -> str | None:
    """Why ``question`` is off-topic for the turn whose results are ``evidence``, or None (see the module docstring).

    Args:
        question: The operator's message.
        evidence: The turn's tool results.
        domain: `domain_words` of the tools' descriptions and the session's earlier reads.
    """
    if not evidence.results:
        if RECORD_ID.search(question) or any(record_mentions(question, kind) for kind in RECORD_KINDS):
            return None
        words = _content_words(question)
        if not words or words & set(domain):
            return None
        return f"no tool ran and the question's words ({', '.join(sorted(words)[:5])}) name nothing of the plant"
    facts = evidence.records or evidence.readings or evidence.alarm_list or evidence.alarm_counts or evidence.actions
    if facts or not evidence.passages:
        return None
    best = max(p.score for p in evidence.passages)
    if best < PASSAGE_FLOOR:
        return f"the only results are manual passages, the best scoring {best:.2f} against the question"
    return None


def _content_words(text: str) -> set[str]:
    words = set()
    for word in _WORD.findall(text.lower()):
        if word in FUNCTION_WORDS:
            continue
        words.add(word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word)
    return words
