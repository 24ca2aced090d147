"""Claims an answer written without tool results cannot back: the plant's state, or the tools themselves.

A model may answer a terse operator question without calling a tool and vouch for the plant ("No problems.",
"Yes, we're good.", "No, the system is functioning well.") or tell the operator which tool to use ("check the
assets-get_system_summary"). Either way its own answer shows it took the question to need the plant's data.
`data_claim` finds such a phrase; the turn (`turn.policies`) then reads the plant's state and asks again, so the
claim is never shown.

What counts, case-insensitive:

* **A state claim** (`checks.reassurance.STATE_CLAIM`, shared with the check of answers after results):
  the plant, the system, the fleet, the pumps, "everything", "all", "we" or "they" said to be
  fine, OK, good, normal, operational, functioning, healthy, stable, under control ("the system is
  functioning well", "we're good", "Everything good!", "All pumps are running normally", "I've been working
  on the pumps to ensure they are running smoothly").
  "I" is never such a subject: "I'm fine, thank you" answers small talk.
* **A denial of trouble** (`checks.reassurance.DENIAL`): no, nothing or none with problems, issues,
  alarms, faults, failures, concerns, errors, warnings or anomalies in the plural, or with "wrong" or
  "trouble" ("Nothing wrong", "There are no active alarms"), or an opening "None yet" / "None so far". "No
  problem" in the singular is politeness, not a claim.
* **Data it never read**: "as per the most recent system summary", "based on the latest readings",
  "based on the information I have", the fleet told as a count ("There are multiple pumps in maintenance.")
  or a record id the operator did not name ("The single worst pump is PUMP-003.").

A measurement (`measurement`: a number with a unit of the plant's quantities, "3.9 mm/s", "81 °C", "88 psi") is a
claim too when the question is about the plant: every number in an answer comes from a tool result, and none has
run. The caller judges the question (`checks.scope.off_topic`): "Sunny and 21 °C" answers the weather.
* **Setting out to look**: "Let's find out what's wrong.", "Let me check." (the verb right after: "Let me
  explain how to check a seal" explains, and an offer, "We can check that for you", is not a claim).
* **Tool talk**: an advertised tool's name, with or without its plugin (``assets-list_pumps``,
  ``get_system_summary``), a plugin named as a tool ("the assets tool"), call markup (``<tool_call>``,
  ``<tools>``, ``{"name":``) or the fence word of tool results.

Pure: regular expressions only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from checks.reassurance import DENIAL, STATE_CLAIM
from checks.record_ids import ungrounded_ids
from kernel_setup.shaping import FENCE_WORD

__all__ = ["data_claim", "measurement"]

_UNREAD_DATA = (
    r"\b(?:according to|as per|based on|per)\s+(?:the\s+|my\s+|our\s+)?"
    r"(?:latest\s+|most recent\s+|current\s+|last\s+|available\s+)?"
    r"(?:system\s+|sensor\s+|alarm\s+)?(?:summary|data|readings|records|registry|logs?|report|information)\b"
)
# The fleet's state told as a count: "There are multiple pumps in maintenance."
_STATE_WORD = r"(?:active|critical|offline|tripped|unacknowledged)"  # not "running": "two pumps running in parallel"
_FLEET_COUNT = (
    r"\bthere (?:are|is)\s+(?:[\w-]+\s+){0,2}?(?:pumps?|alarms?|work orders?)\s+"
    rf"(?:{_STATE_WORD}|in maintenance|under maintenance|in alarm)\b"
    rf"|\bthere (?:are|is)\s+(?:[\w-]+\s+)?{_STATE_WORD}\s+(?:pumps?|alarms?|work orders?)\b"
)
# Trouble denied in one word, before any data: "None yet, thank you." (to "Any issues?").
_NONE_SO_FAR = r"^\W*none (?:yet|so far|at the moment|right now|currently|today)\b"
# The model setting out to look (now, not offering to): "Let's find out what's wrong.", "Let me check."
_LOOKING = r"\blet(?:'s| us| me)\s+(?:(?:just|quickly|first)\s+)?(?:check|find out|look into|take a look|pull up)\b"
# A number with a unit of the plant's quantities (the registry's and their common variants): "3.9 mm/s", "81 °C".
_MEASUREMENT = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?\s*(?:mm/s|in/s|°\s?[CF]\b|bar\b|psi\b|kpa\b|m³/h|m3/h|l/s|gpm\b|kw\b|rpm\b)",
    re.IGNORECASE,
)
_MARKUP = rf"<tool_call>|</?tools>|\{{\s*\"name\"\s*:|{re.escape(FENCE_WORD)}"
_CLAIMS = re.compile(
    rf"{STATE_CLAIM}|{DENIAL}|{_NONE_SO_FAR}|{_FLEET_COUNT}|{_UNREAD_DATA}|{_LOOKING}|{_MARKUP}", re.IGNORECASE
)


def data_claim(text: str, tool_names: Sequence[str], asked: str = "") -> str | None:
    """The first phrase of ``text`` that speaks for the plant's data or its tools, or None.

    ``tool_names`` are the advertised functions' full names (``assets-list_pumps``): the full name, the
    function part and the plugin followed by "tool", "function" or "plugin" all count. A record id
    (``PUMP-003``, ``ALM-0001``) that ``asked``, the operator's message, does not name counts too.
    """
    text = text.replace("\u2019", "'")  # a typographic apostrophe: "We\u2019re good."
    found = _CLAIMS.search(text)
    if found:
        return found.group(0)
    invented = ungrounded_ids(text, [], asked)
    if invented:
        return invented[0]
    for name in tool_names:
        plugin, _, function = name.rpartition("-")
        patterns = [re.escape(name), re.escape(function)]
        if plugin:
            patterns.append(rf"{re.escape(plugin)}\s+(?:tool|function|plugin)s?")
        named = re.search(rf"(?<![\w-])(?:{'|'.join(patterns)})(?![\w-])", text, re.IGNORECASE)
        if named:
            return named.group(0)
    return None


def measurement(text: str) -> str | None:
    """The first measurement ``text`` states (a number with a unit of the plant's quantities: "3.9 mm/s"), or None."""
    found = _MEASUREMENT.search(text)
    return found.group(0) if found else None
