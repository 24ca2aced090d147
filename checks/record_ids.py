"""Record ids in prose: pumps, alarms, work orders and approvals as an answer writes them, and the ones nothing read.

Record ids (``PUMP-007``, ``ALM-0001``, ``WO-0001``, ``APR-1A2B3C4D``) are checked apart from numbers, by
`ungrounded_ids`, against every text the caller passes (the runner: this turn's results and the session's earlier
questions and results): an id nothing read is a record the model made up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from governance import APPROVAL_ID

__all__ = ["RECORD_ID", "pump_key", "record_key", "ungrounded_ids"]

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
