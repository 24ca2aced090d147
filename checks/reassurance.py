"""Reassurance the data contradicts: an answer that calls the plant fine while its tool results hold alarms.

An operator who reads "Everything is running normally." should be able to trust it. Numbers are checked by
`checks.grounding`; this checks the one sentence that matters most the other way: after reading five
active alarms, a small model may still open with "Everything is fine". `overlooked_alarms` returns the
active alarms of the turn's results that an all-clear sentence of the answer passes over, so the operator
is warned under the answer (and `pumpops eval` counts the answer as ungrounded).

What counts as an all-clear (case-insensitive), sentence by sentence:

* **A state claim**: the plant, the system, the fleet, the pumps, "everything", "all" or "we" said to be
  fine, OK, good, normal, healthy, stable, under control ("the system is functioning well", "All pumps are
  running normally"). Merely up is not well: "All pumps are online." answers a status question.
* **A denial of trouble** (`DENIAL`): no, nothing or none with problems, issues, alarms, faults … ("Nothing
  wrong", "There are no critical alarms"). "No problem" in the singular is politeness, not a claim.

(`STATE_CLAIM`, the broader form with "online", "operational" and "working", is the local model's claim check's.)
A sentence that scopes its claim is left alone: one with "except", "but", "however", "apart from", "other",
"else", "new", "more", "previous", "unacknowledged", "the rest", "otherwise" and the like ("PUMP-007 has a
critical alarm and no other problems", "No new alarms since this morning"), one about "pump 2", or whose
subject is one pump or "they" (who they are is in another sentence). A sentence that names pump ids speaks
for those pumps only. A general all-clear is contradicted by active critical or high alarms; a denial of
alarms by any active alarm, or by those of the severities it names ("no critical alarms"). An alarm the
answer reports anywhere (its id; or its severity and its pump; for a summary count, its severity) is not
overlooked, whatever else the answer says.

The alarms are the evidence's (`Evidence.active_alarms`): every object with an ``alarm_id`` and a ``severity``
that is not marked ``"active": false`` (alarm lists, a pump's ``active_alarms``, whose pump is the enclosing object's
``pump_id``), and the fleet summary's ``active_alarms_by_severity`` counts when no listed alarm accounts for
them.

Severities: `misstated_severities` returns the alarms an answer gives the wrong severity, in two plain forms: a
severity told right after an alarm's id ("ALM-0002 (critical)", "ALM-0002 is critical on PUMP-004"; a severity,
not a reading: "ALM-0004 reports low discharge pressure" tells none), and every alarm said to be of one severity
("5 active alarms, all of which are high severity") while the results hold active alarms of another. A 1.5B model
wrote both, and a critical alarm called high is the same false comfort as an all-clear.

The question side: `asks_for_reassurance` tells a terse question after the plant's state ("Anything wrong?",
"Are we OK?", "Everything good?", "How are things?") from small talk ("How are you?", "All good, thanks.").
Such a question can only be answered from data, yet the local model scores it as low as small talk and
answers it from nothing; its routing therefore calls a read for it. The alarms come from the turn's
`checks.evidence.Evidence`; the word lists are `checks.vocabulary`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from checks.evidence import AlarmFact, Evidence
from checks.grounding import SENTENCE_BREAK
from checks.record_ids import RECORD_ID, record_key
from checks.vocabulary import ALL_CLEAR_WORDS, SCOPING_WORDS, SEVERITIES, TROUBLE_WORDS, alternation, choice

__all__ = ["DENIAL", "STATE_CLAIM", "asks_for_reassurance", "misstated_severities", "overlooked_alarms"]

_SUBJECT = (
    r"(?:everything|all(?: (?:the )?(?:pumps|stations|systems|equipment))?|things|we|they|"
    r"(?:the|our) (?:pump |pumping )?"
    r"(?:system|systems|plant|fleet|station|stations|pumps?|equipment|site|network|operations?))"
)
_LINK = r"(?:'s|'re|\s+(?:is|are|looks?|seems?|appears?|remains?|runs?|stays?|operates?|working))?"
_ADVERB = (
    r"(?:\s+(?:to be|all|currently|now|still|fully|pretty|quite|very|running|operating|looking|functioning|doing|"
    r"going))*+"
)
# What an all-clear after results says: well, not merely up ("All pumps are online." answers a status question).
_GOOD = choice(ALL_CLEAR_WORDS)
_WELL = rf"(?:{_GOOD}|clear)"
# What the claim check counts before any data: up or working is a claim too.
_STATE = rf"(?:{_WELL}|operational|functioning|working|online|as expected)"
_TROUBLE = choice(TROUBLE_WORDS)


def _said_to_be(state: str) -> str:
    """The plant or everything said to be in ``state`` (a regular expression)."""
    return rf"\b{_SUBJECT}{_LINK}{_ADVERB},?\s+{state}\b"


STATE_CLAIM = _said_to_be(_STATE)
"""A regular expression (to compile case-insensitive): the plant or everything said to be in a good state."""
DENIAL = (
    rf"\b(?:no|nothing|none|not any|zero)\b(?:\s+[\w-]+){{0,3}}?\s+{_TROUBLE}\b|\bnothing(?:'s| is)? wrong\b"
    r"|\bnothing (?:much|important|unusual|significant|notable|special|serious|of note)\b"
)
"""A regular expression (to compile case-insensitive): trouble denied ("no active alarms", "nothing wrong")."""

# The question side. A whole message asking after the plant's state, with at most a greeting before it and a
# place or time after it; it ends with a question mark (a status request need not). The repeated groups are
# possessive and their alternatives disjoint, so a long message is judged in linear time.
_GREETING = (
    r"(?:(?:hi|hello|hey|so|and|ok|okay|well|morning|good (?:morning|afternoon|evening|night)|team)\b[\s,!.]*)*+"
)
_ASKED_TROUBLE = (
    r"(?:problems?|issues?|alarms?|faults?|failures?|concerns?|errors?|warnings?|anomal(?:y|ies)|trouble|wrong|"
    r"broken|down|unusual|going on|news|updates?|to report|to worry about|(?:i|we) (?:should|need to) (?:know|worry)"
    r"(?: about)?|pumps? (?:down|offline|tripped|in alarm))"
)
_ASKED_SUBJECT = (
    r"(?:everything|all(?: (?:the )?pumps)?|things|we|it all|(?:the|our) (?:plant|system|fleet|pumps|stations?|site))"
)
# "clear" is left out: "Are we clear?" checks understanding.
_ASKED_WELL = rf"(?:{_GOOD}|alright|all right|up and running)"
_ASKED = (
    r"(?:(?:is|are)\s+)?(?:there\s+)?any(?:thing)?(?:\s+(?:new|serious|urgent|active|critical|open))?\s+"
    rf"{_ASKED_TROUBLE}"
    rf"|(?:(?:is|are)\s+)?{_ASKED_SUBJECT}{_LINK}(?:\s+(?:still|all|looking|running|doing|going))?\s+{_ASKED_WELL}"
    r"|what(?:'s| is)\s+(?:wrong|broken|going on|happening|the (?:current |overall )?(?:status|situation))"
    # "How are things going?" is small talk as much as "How's it going?"; "How are things?" asks after the plant.
    rf"|how(?:'s| is| are|'re)\s+{_ASKED_SUBJECT}(?:\s+(?:doing|looking|running))?"
)
_WHEN_OR_WHERE = (
    r"(?:\s+(?:today|now|right now|at the moment|at all|so far|currently|here|out there|overnight|tonight|"
    r"this (?:morning|afternoon|evening|week)|(?:with|at|in|across|on) (?:the |our )?"
    r"(?:pumps?|plant|system|fleet|stations?|site)))*+"
)
_STATUS_REQUEST = (
    r"(?:(?:give me )?(?:an? |the )?(?:current |overall |plant |fleet )?(?:status(?: update| report| check)?|sitrep)"
    r"(?: please)?)"
)
_ASKS_FOR_REASSURANCE = re.compile(
    rf"^\W*{_GREETING}(?:(?:{_ASKED}){_WHEN_OR_WHERE}\s*\?[\s?!]*|{_STATUS_REQUEST}\W*)$",
    re.IGNORECASE,
)

_ALL_CLEAR = re.compile(rf"(?P<claim>{_said_to_be(_WELL)})|(?P<denial>{DENIAL})", re.IGNORECASE)
_SCOPED = re.compile(rf"{alternation(SCOPING_WORDS)}|\bpumps? (?:no\.?\s*|#)?\d", re.IGNORECASE)
_ONE_THING = re.compile(r"^(?:they|(?:the|our) (?:pump |pumping )?(?:pump|station)\b(?!s))", re.IGNORECASE)
_SEVERITIES = SEVERITIES
_SERIOUS = frozenset({"critical", "high"})
# A severity as a severity, followed by the end of the phrase or "severity", not by what was measured ("high
# vibration", "low discharge pressure").
_HYPHEN = "\\-\u2010\u2011\u2013"  # for a character class: the hyphens and the en dash models write
_AS_SEVERITY = (
    rf"(?P<severity>critical|high|medium|low)\b(?=\s*(?:[{_HYPHEN} ]?(?:severity|priority)\b|alarms?\b|one\b|\)|,|"
    r"\.|;|:|$|(?:on|at|and|for|since)\b))"
)
# Told of the alarm whose id the text follows: "(critical", ", is critical", " on PUMP-004 is high", ", a low-severity
# alarm"; nothing else may stand between ("ALM-0001 means the motor temperature is high" tells no severity).
_AFTER_ID = re.compile(
    r"\s*(?:[(:,]\s*)?(?:(?:on|at|for)\s+pump[- ]?\d+\s*,?\s*)?(?:(?:is|was|are|were|being|has been|with)\s+)?"
    rf"(?:(?:a|an)\s+)?{_AS_SEVERITY}",
    re.IGNORECASE,
)
_AFTER_ID_WINDOW = 60  # characters after an alarm id where its severity may be told
# Told just before the id, as the alarm's kind: "the critical alarm ALM-0002", "a high-severity alarm (ALM-0001)";
# nothing but the word "alarm" (and "(" or "id") between ("the critical alarm, ALM-0002 is high" tells of another).
# A ranking or a negation is not the alarm's severity ("the most critical alarm ALM-0002", "the only non-critical alarm
# ALM-0004", "not a high alarm").
_BEFORE_ID = re.compile(
    rf"(?<![\w{_HYPHEN}])(?<!most )(?<!more )(?<!less )(?<!least )(?<!non )(?<!not )(?<!not a )(?<!not an )"
    rf"(?P<severity>critical|high|medium|low)(?:[{_HYPHEN} ](?:severity|priority))?\s+alarm\s*(?:\(\s*|id\s+)?$",
    re.IGNORECASE,
)
_BEFORE_ID_WINDOW = 40  # characters before an alarm id (and after the one before it) where its severity may be told
# Every alarm said to be of one severity: "5 active alarms, all of which are high severity", "all the active alarms
# are critical", "the alarms on PUMP-007 are all critical". The subject must be the alarms.
_ALL_OF_ONE = re.compile(
    r"(?:(?<!not )(?<!almost )(?<!nearly )\ball\s+(?:of\s+)?(?:the\s+)?(?:(?:active|current|open|\d+)\s+)?alarms\s+"
    r"(?:are|were|have|being)\s+(?:of\s+|an?\s+)?"
    r"|\balarms,?\s+all\s+of\s+(?:which|them)\s+(?:are|were|have|being)\s+(?:of\s+|an?\s+)?"
    r"|\balarms(?:\s+(?:on|at|for)\s+[\w-]+(?:\s+and\s+[\w-]+)?)?\s+(?:are|were)\s+all\s+(?:of\s+)?)"
    rf"{_AS_SEVERITY}",
    re.IGNORECASE,
)


def overlooked_alarms(answer: str, evidence: Evidence) -> list[str]:
    """Active alarms in ``evidence`` that an all-clear sentence of ``answer`` passes over, described.

    Each is ``"ALM-0001 (critical on PUMP-007)"``, or ``"1 high active alarm (fleet summary)"`` for a count
    no listed alarm accounts for; empty when the answer vouches for nothing, the results back it, or the answer
    reports the alarm itself (its id, or its severity together with its pump; a summary count, its severity).
    """
    answer = answer.replace("\u2019", "'")  # a typographic apostrophe: "We\u2019re good."
    told = _ALL_CLEAR.sub(" ", answer)  # what the answer reports besides its all-clear phrases
    alarms = [a for a in evidence.active_alarms() if not _reported(a, told)]
    if not alarms:
        return []
    found: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer):
        for alarm in _contradicting(sentence, alarms):
            found[alarm.describe()] = None
    return list(found)


def asks_for_reassurance(message: str) -> bool:
    """Whether the operator's ``message`` is a terse question after the plant's state ("Any issues?").

    The whole message must be the question: a greeting may come before it and a time or the plant after it
    ("Hi, anything wrong with the pumps today?"); it ends with a question mark, except "Status" and the like.
    Questions about the assistant ("How are you?", "Are you OK?") and acknowledgements ("All good, thanks.")
    are not.
    """
    return _ASKS_FOR_REASSURANCE.match(message.replace("\u2019", "'").strip()) is not None


def misstated_severities(answer: str, evidence: Evidence) -> list[str]:
    """The alarms of ``evidence`` that ``answer`` gives the wrong severity, described.

    ``"ALM-0002 is high, not critical"`` for an id told with another severity: in its own clause, within 60
    characters after it, before the next alarm or work-order id or the sentence's end; or as the alarm's kind just
    before it ("the critical alarm ALM-0002", within 40 characters and after the id before it). And ``"ALM-0001 is
    critical, not high"`` for an active alarm under a sentence saying all alarms are high (a sentence naming pumps
    speaks for their alarms only). Alarms the results do not hold, and severities told any other way, are not judged.
    """
    answer = answer.replace("\u2019", "'")
    listed = _listed_alarms(evidence)
    found: dict[str, None] = {}
    for sentence in SENTENCE_BREAK.split(answer):
        if "respectively" in sentence.lower():
            continue  # "ALM-0001 and ALM-0002 are critical and high respectively": told in order, not after each id
        ids = [m for m in RECORD_ID.finditer(sentence) if m.group("kind") and m.group("kind").upper() != "PUMP"]
        for number, mention in enumerate(ids):
            alarm = listed.get(record_key(mention))
            if alarm is None:
                continue
            end = ids[number + 1].start() if number + 1 < len(ids) else len(sentence)
            start = max(ids[number - 1].end() if number else 0, mention.start() - _BEFORE_ID_WINDOW)
            for told in (
                _AFTER_ID.match(sentence, mention.end(), min(end, mention.end() + _AFTER_ID_WINDOW)),
                _BEFORE_ID.search(sentence, start, mention.start()),
            ):
                if told and told.group("severity").lower() != alarm.severity:
                    found[f"{alarm.alarm_id} is {alarm.severity}, not {told.group('severity').lower()}"] = None
        claim = _ALL_OF_ONE.search(sentence)
        if claim is None or _SCOPED.search(sentence):
            continue  # "the others are all low", "apart from ALM-0001, ...": not every alarm
        said = claim.group("severity").lower()
        pumps = _pumps(sentence)
        named = {record_key(m) for m in ids}
        for key, alarm in listed.items():
            if alarm.active and alarm.severity != said and key not in named and (not pumps or alarm.pump in pumps):
                found[f"{alarm.alarm_id} is {alarm.severity}, not {said}"] = None
    return list(found)


def _listed_alarms(evidence: Evidence) -> dict[tuple[str, str], AlarmFact]:
    """Every alarm the results list, by the `record_key` of its id (an id that is no record id is its own key)."""
    listed: dict[tuple[str, str], AlarmFact] = {}
    for alarm in evidence.alarm_list.values():
        alarm_id = alarm.alarm_id or ""
        match = RECORD_ID.fullmatch(alarm_id)
        listed[record_key(match) if match else ("", alarm_id.upper())] = alarm
    return listed


def _reported(alarm: AlarmFact, told: str) -> bool:
    """Whether ``told`` tells of ``alarm``: by its id, or by its severity and (unless a count) its pump."""
    if alarm.alarm_id is not None and re.search(rf"\b{re.escape(alarm.alarm_id)}\b", told, re.IGNORECASE):
        return True
    if not re.search(rf"\b{alarm.severity}\b", told, re.IGNORECASE):
        return False
    return alarm.pump is None or alarm.pump in _pumps(told)


def _pumps(text: str) -> set[str]:
    """The pump ids ``text`` names, in the registry's form (``pump-7`` is ``PUMP-007``)."""
    return {f"PUMP-{int(m.group('number')):03d}" for m in RECORD_ID.finditer(text) if m.group("kind").upper() == "PUMP"}


def _contradicting(sentence: str, alarms: Sequence[AlarmFact]) -> Iterator[AlarmFact]:
    """The alarms that contradict ``sentence``'s all-clear, if it holds an unscoped one."""
    match = _ALL_CLEAR.search(sentence)
    if match is None or _SCOPED.search(sentence) or _ONE_THING.match(match.group(0)):
        return
    phrase = match.group(0).lower()
    named = {s for s in _SEVERITIES if re.search(rf"\b{s}\b(?!-)", phrase)}
    if named:
        severities: frozenset[str] = frozenset(named)
    elif match.group("denial") and "alarm" in phrase:
        severities = frozenset(_SEVERITIES)
    else:
        severities = _SERIOUS
    pumps = _pumps(sentence)
    for alarm in alarms:
        if alarm.severity not in severities:
            continue
        if pumps and (alarm.pump is None or alarm.pump not in pumps):
            continue  # a count from the summary says nothing about the pumps named
        yield alarm
