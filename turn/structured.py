"""Structured answers in the turn (``Agent.StructuredAnswers``, off by default): the model cites, code writes.

When the model has answered a turn that read data, the turn asks it once more, without tools, for the answer in
the structured form of `checks.structured`: this turn's evidence as numbered records, one a line, and a response
format (`chat.response_format`) that each connector enforces, Ollama with its ``format`` and the local model with a
grammar. The operator is shown what code writes from the cited records (every number copied from the results),
and that answer passes the answer checks like any other (`turn.acting`).

The model's own answer (the round that ended its calls) stands, checked as ever, when the turn read nothing (no
record to cite), when no structured reply came (deadline, service failure), or when the reply is not the JSON asked
for or cites only records the turn lacks. What happened is in the turn's corrections, under the check
``structured_answer``:

* ``written``: the answer was written from the cited records (the finding lists them);
* ``dropped``: part of the reply was left out (a claim citing no record of this turn, a note holding digits);
* ``kept_text``: no usable reply (none came, not the JSON asked for, or citing only records the turn lacks); the
  model's own answer was kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from checks.evidence import Evidence
from checks.structured import answer_records, answer_request, answer_schema, render_answer
from turn.events import Correction

__all__ = ["CHECK", "AskFormatted", "Structured", "structured_answer"]

CHECK = "structured_answer"

AskFormatted = Callable[[str, Mapping[str, Any]], Awaitable[str | None]]
"""Asks the model once more, without tools, with the given message and response format; its reply, or None."""


@dataclass(frozen=True)
class Structured:
    """The answer to check and show, and what the structured step did (see the module docstring)."""

    answer: str
    corrections: list[Correction] = field(default_factory=list)


async def structured_answer(evidence: Evidence, draft: str, ask: AskFormatted) -> Structured:
    """The answer written from the records the model cites, or ``draft`` (the model's own) when it cannot be."""
    records = answer_records(evidence)
    if not records:
        return Structured(draft)
    reply = await ask(answer_request(records), answer_schema([r.id for r in records]))
    rendered = render_answer(reply, records) if reply is not None else None
    if rendered is None:
        why = (
            "no structured reply came"
            if reply is None
            else f"the reply is not the JSON asked for, or cites only records this turn lacks: {reply[:80]!r}"
        )
        return Structured(draft, [Correction(check=CHECK, finding=why, action="kept_text")])
    cited = f"cited {', '.join(rendered.cited)}" if rendered.cited else "cited no record"
    notes = [Correction(check=CHECK, finding=cited, action="written")]
    notes += [Correction(check=CHECK, finding=finding, action="dropped") for finding in rendered.dropped]
    return Structured(rendered.text, notes)
