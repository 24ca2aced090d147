"""Every answer check on one answer, and which of their findings act on it.

Acting findings stop an answer from being shown as written: an unbacked action claim, a zone-D pump let run as
normal, an all-clear over active alarms, a misstated severity, a comparison the numbers contradict, a record id
no result or message holds, a number neither the results, the operator nor an earlier read gives (every number an
operator sees comes from a tool result), a value the results mark stale stated as the current one. A number told of
another pump stays a warning under the answer: which pump a sentence speaks for is read from its wording, too loosely
to rewrite an answer over.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from checks.actions import unbacked_actions
from checks.evidence import Evidence
from checks.grounding import misattributed_numbers, misstated_comparisons, ungrounded_numbers
from checks.rankings import misranked_pumps
from checks.reassurance import misstated_severities, overlooked_alarms
from checks.record_ids import ungrounded_ids
from checks.safety import unsafe_reassurance
from checks.staleness import stale_as_current

__all__ = ["ACTING_CHECKS", "Finding", "Review", "retry_request", "review_answer"]

ACTING_CHECKS: dict[str, str] = {
    "unbacked_actions": (
        "Claim no action that no tool result shows as executed. A write parked for approval is only submitted "
        "for a supervisor's approval: give its approval id and say it is not done yet. You cannot approve, stop, "
        "restart or reset anything."
    ),
    "unsafe_reassurance": (
        "A pump in ISO 10816-3 zone D has vibration severe enough to cause damage: never say it may keep running "
        "as normal; give its value, unit and zone."
    ),
    "overlooked_alarms": "Do not call the plant fine while the results hold active alarms; name them by severity.",
    "misstated_severities": "Give each alarm the severity its tool result gives.",
    "misstated_comparisons": "Compare values exactly as the numbers in the tool results order them.",
    "ungrounded_ids": "Name only the record ids that the tool results or the operator gave.",
    "ungrounded_numbers": (
        "State only numbers that the tool results or the operator gave, as the results write them: no number "
        "from memory, no conversion, no estimate. The numbers above are in none of them."
    ),
    "stale_readings": (
        "A value the tool results mark stale is not current: give it with its reading time and say it is stale; "
        "never state it as the current value."
    ),
}
"""Each acting check, with what the model is told when it answers again."""


@dataclass(frozen=True)
class Finding:
    """One thing a check found wrong with an answer."""

    check: str
    finding: str


@dataclass(frozen=True)
class Review:
    """What every check found in one answer."""

    ungrounded_numbers: list[str]
    ungrounded_ids: list[str]
    misattributed_numbers: list[str]
    overlooked_alarms: list[str]
    misstated_severities: list[str]
    misstated_comparisons: list[str]
    unbacked_actions: list[str]
    unsafe_reassurance: list[str]
    stale_readings: list[str]

    def acting(self) -> list[Finding]:
        """The findings that stop the answer from being shown as written, most serious check first."""
        order = ("unbacked_actions", "unsafe_reassurance", *ACTING_CHECKS)
        checks = dict.fromkeys(order)
        return [Finding(check, found) for check in checks for found in getattr(self, check)]


def review_answer(answer: str, evidence: Evidence, question: str, read_texts: Sequence[str] = ()) -> Review:
    """Run every check on ``answer`` against the turn's ``evidence``.

    ``read_texts`` are what else the session read (the operator's messages, earlier results): a record id or a
    number found there is not made up.
    """
    return Review(
        ungrounded_numbers=ungrounded_numbers(answer, evidence, question, read_texts),
        ungrounded_ids=ungrounded_ids(answer, [*evidence.texts, *read_texts], question),
        misattributed_numbers=misattributed_numbers(answer, evidence, question),
        overlooked_alarms=overlooked_alarms(answer, evidence),
        misstated_severities=misstated_severities(answer, evidence),
        # A number against a limit, and one pump against another on a measurement the results give both.
        misstated_comparisons=[*misstated_comparisons(answer), *misranked_pumps(answer, evidence)],
        unbacked_actions=unbacked_actions(answer, evidence),
        unsafe_reassurance=unsafe_reassurance(answer, evidence, question),
        stale_readings=stale_as_current(answer, evidence),
    )


def retry_request(findings: Sequence[Finding]) -> str:
    """The message that asks the model to answer once more, each finding stated plainly with the rule it broke."""
    lines = ["An answer check stopped your last answer; the operator has not seen it. It found:"]
    lines += [f"- {f.finding}" for f in findings]
    lines += [ACTING_CHECKS[c] for c in dict.fromkeys(f.check for f in findings)]
    lines.append("Answer the operator again, from the tool results above only.")
    return "\n".join(lines)
