"""The turn's policies: what a turn does around the model's own choices, the same for every chat model.

A connector only translates and decodes; these rules decide, and so hold for Ollama, the in-process model and
whatever comes later. Each can be switched off in settings (`Agent.Policies`), per deployment, for a model that
does not need it.

* **Status questions.** A terse question after the plant's state ("Anything wrong?", "Are we OK?":
  `checks.reassurance.asks_for_reassurance`) can only be answered from data, yet reads like small talk: the turn
  calls the fleet summary itself before the model's first call, and the model answers from its result.
* **Follow-up calls.** After a round of results, values the operator named for a parameter the calls used that none
  asked for get the same read again with each value ("PUMP-001 and PUMP-002" after PUMP-001's details); else a
  question naming pumps that no call could speak for (only the fleet summary or the manuals were read: no call's
  tool takes a pump id) gets each named pump's details; else a question whether a named pump may keep running gets
  that pump's details, whose ISO 10816-3 zone the safety check judges the answer by (`checks.safety`); else a
  message asking what the manuals say gets the manuals search when the turn has not searched them; else, after
  reads only, a read the message names by its declared words ("work order") that no call made (`turn.follow_up`).
  Only reads follow up: a second write nobody quite asked for is left to the operator.
* **Claims without data.** An answer written before any tool ran that speaks for the plant's data or names a tool
  ("No problems.", "There are no active alarms", "check the assets-get_system_summary": `checks.claims.data_claim`),
  or states a measurement to a question about the plant, shows the model took the question to need data; so does a
  follow-up's answer, written before the turn's first call, with a number or id no earlier result holds. It is never
  shown: the turn reads the details of the pumps the question names (however spelled: "pump 7", "P7"), or else the
  fleet summary, and asks again. Whatever such an answer says, a question asking what the manuals say gets the
  manuals search, and one naming a pump nothing the conversation read speaks for gets that pump's details.
* **Writes asked for.** A write the operator's message does not ask for (the words it declares) is not offered to
  the model (`uncallable`, a function choice filter each connector applies to its model's choice), and a call of
  it that comes anyway is refused (`unasked_write`).
* **Parked actions.** A round whose every call was parked for a supervisor is answered by code, with the gate's own
  approval ids: "Waiting for a supervisor's approval as APR-…; nothing has been done yet." No model call can leave
  the id out, invent one or promise a run.

Calls a policy makes are ordinary calls: they run through the kernel's filters, are audited, and enter the
conversation as the assistant's calls with their results.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.function_calling_utils import kernel_function_metadata_to_function_call_format
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.exceptions import KernelException
from semantic_kernel.functions.kernel_function import KernelFunction

from chat.mentions import tool_schemas
from checks.claims import data_claim, measurement
from checks.evidence import Evidence, canonical_id
from checks.grounding import ungrounded_numbers
from checks.reassurance import asks_for_reassurance
from checks.record_ids import ungrounded_ids
from checks.safety import asks_to_keep_running, pump_ids
from checks.scope import off_topic
from checks.vocabulary import AFFIRMATIVE_WORDS
from kernel_setup.shaping import FLEET_SUMMARY_TOOL, MANUALS_TOOL, PUMP_DETAILS_TOOL
from plugins.declarations import ToolTraits, traits_of
from turn.events import ToolCallRecord
from turn.follow_up import asked_reads, asks_the_manuals, holds_word, unasked_values

__all__ = ["MAX_FOLLOW_UPS", "PARKED_ANSWER", "TurnPolicies", "policy_call"]

MAX_FOLLOW_UPS = 4
"""At most this many follow-up calls after one round of results."""

PARKED_ANSWER = "Waiting for a supervisor's approval as {ids}; nothing has been done yet."

Call = tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class TurnPolicies:
    """Which policies a turn applies, and the tools they call (full names, ``plugin-function``)."""

    status_questions: bool = True
    claim_check: bool = True
    follow_up_calls: bool = True
    parked_answer: bool = True
    writes_asked_for: bool = True
    status_tool: str = FLEET_SUMMARY_TOOL
    manuals_tool: str = MANUALS_TOOL
    details_tool: str = PUMP_DETAILS_TOOL

    def opening_calls(self, question: str, kernel: Kernel) -> list[FunctionCallContent]:
        """The calls the turn makes before the model's first call: the fleet summary for a status question."""
        if not self.status_questions or not asks_for_reassurance(question) or not _is_read(kernel, self.status_tool):
            return []
        return [policy_call(self.status_tool, {})]

    def unasked_write(self, call: FunctionCallContent, asked: str, kernel: Kernel) -> str | None:
        """Why the model's write ``call`` is not made: the operator did not ask for its action; None when asked.

        A write declares the words a request for it holds (`plugins.declarations.ToolTraits.asked_by`: "work
        order", "acknowledge", ...). ``asked`` is the operator's message, with the assistant's last message when
        the operator only agreed to it (`request_text`). A write without such words declared is not judged. The
        refusal is a tool result the model recovers from: it answers what was asked, and may offer the action.
        """
        try:
            function = kernel.get_function(call.plugin_name, call.function_name)
        except KernelException:
            return None  # an unknown tool is refused by the runner anyway
        if not self._unasked(traits_of(function), asked):
            return None
        return (
            f"Not done: the operator did not ask for {call.name}. Nothing was proposed or changed. Answer what the "
            "operator asked; if this action would help, say so, and the operator can ask for it."
        )

    def uncallable(self, asked: str, kernel: Kernel) -> list[str]:
        """The writes the model is not offered to call this turn (full names): those ``asked`` does not ask for.

        The same rule as `unasked_write`, applied before the model chooses: a model that cannot call a write nobody
        asked for picks among the reads instead ("Shut down PUMP-007" reads its details rather than acknowledging
        its alarm). The tools stay described to the model; only its choice narrows. `unasked_write` still refuses
        such a call should a connector let one through.
        """
        return [f.fully_qualified_name for f in _functions(kernel) if self._unasked(traits_of(f), asked)]

    def _unasked(self, traits: ToolTraits, asked: str) -> bool:
        """Whether ``asked`` holds none of the words a write with ``traits`` declares (never for a read)."""
        if not self.writes_asked_for or traits.read_only or not traits.asked_by:
            return False
        return not holds_word(asked, traits.asked_by)

    def declines_calls(self, question: str, domain: Collection[str]) -> bool:
        """Whether the model's first calls go unmade because the question names nothing of the plant.

        The scope rule (`checks.scope.off_topic` with no results yet, ``domain`` the words of the tools and of the
        session's earlier reads) judged before any read instead of after the answer: a question about the weather,
        trivia or a poem needs no plant data, and a read made for it only lends the refusal's subject a result to
        be answered from. A status question ("Anything wrong?") names no plant word either and is read for
        (`opening_calls`).
        """
        return not asks_for_reassurance(question) and off_topic(question, Evidence(), domain) is not None

    def claim_calls(
        self,
        answer: ChatMessageContent,
        question: str,
        kernel: Kernel,
        domain: Collection[str] = frozenset(),
        earlier: Sequence[str] = (),
    ) -> list[FunctionCallContent]:
        """The reads an answer written before this turn's first call calls for, when it speaks for data.

        In a conversation that has read nothing: a claim (`checks.claims.data_claim`), or a measurement
        (`checks.claims.measurement`) to a question about the plant (not `checks.scope.off_topic` with ``domain``, the
        words of the tools and the session's earlier reads: "Sunny and 21 °C" answers the weather, and the scope check
        refuses it). After earlier turns read results (``earlier``, their texts): a number or id of the answer that
        none of them holds (`checks.grounding.ungrounded_numbers`, `checks.record_ids.ungrounded_ids`: a value for
        another pump than the one read, from nowhere). The reads: the details of each pump the question names; a
        question naming none, the fleet summary.

        Whatever the answer says, two questions cannot be answered before a read: one asking what the manuals say
        (`turn.follow_up.asks_the_manuals`: "Per the playbook, what next?") gets the manuals search with
        the operator's words, and one naming a pump that nothing the conversation read speaks for ("And pump 5?"
        after PUMP-004's details) gets that pump's details.
        """
        if not self.claim_check:
            return []
        if asks_the_manuals(question) and _is_read(kernel, self.manuals_tool):
            return [policy_call(self.manuals_tool, {"question": question})]
        if not _is_read(kernel, self.status_tool):
            return []
        names = [m.fully_qualified_name for m in kernel.get_full_list_of_function_metadata()]
        text = answer.content or ""
        about_plant = off_topic(question, Evidence(), domain) is None
        if earlier:
            unbacked = ungrounded_numbers(text, Evidence.of(earlier), question) or ungrounded_ids(
                text, earlier, question
            )
            claimed = bool(unbacked) and about_plant
        else:
            claimed = data_claim(text, names, asked=question) is not None or (
                measurement(text) is not None and about_plant
            )
        named = pump_ids(question) if _is_read(kernel, self.details_tool) else []
        unread = [pump for pump in named if not any(pump in result for result in earlier)]
        if not claimed and not unread:
            return []
        if named:
            return [policy_call(self.details_tool, {"pump_id": pump}) for pump in (unread or named)[:MAX_FOLLOW_UPS]]
        return [policy_call(self.status_tool, {})]

    def follow_ups(self, question: str, made: Sequence[Call], kernel: Kernel) -> list[FunctionCallContent]:
        """The reads the operator's ``question`` still needs after the calls ``made`` this turn (none when covered).

        The values named for a parameter the calls used come first: the last call using that parameter is made again
        with each value. Otherwise, for pumps the question names when no call's tool takes a pump id (the fleet summary,
        the manuals), or named in a question whether they may keep running, their details (their zone).
        Otherwise the manuals search, with the operator's message, when the message asks what the manuals say and no
        call searched them. Otherwise, when every call made was a read, the reads the message names by their declared
        words that none of them was (`turn.follow_up.asked_reads`). A call already made is never repeated.
        """
        if not self.follow_up_calls or not made:
            return []
        tools = _advertised(kernel)
        unasked = unasked_values(made, question, tools)
        wanted: list[Call] = []
        if unasked is not None:
            base = next((c for c in reversed(made) if unasked.parameter in c[1] and _is_read(kernel, c[0])), None)
            if base is not None:
                wanted = [(base[0], {**base[1], unasked.parameter: value}) for value in unasked.values]
        if not wanted and _is_read(kernel, self.details_tool) and not _reads_pumps(made, tools):
            wanted = [(self.details_tool, {"pump_id": pump}) for pump in pump_ids(question)]
        if not wanted and asks_to_keep_running(question) and _is_read(kernel, self.details_tool):
            wanted = [(self.details_tool, {"pump_id": pump}) for pump in pump_ids(question)]
        if not wanted and asks_the_manuals(question) and all(name != self.manuals_tool for name, _ in made):
            if _is_read(kernel, self.manuals_tool):
                wanted = [(self.manuals_tool, {"question": question})]
        if not wanted and all(_is_read(kernel, name) for name, _ in made):
            wanted = asked_reads(made, question, tools, _read_words(kernel), pump_ids(question))
        done = {_key(name, arguments) for name, arguments in made}
        fresh = [(name, arguments) for name, arguments in wanted if _key(name, arguments) not in done]
        return [policy_call(name, arguments) for name, arguments in fresh[:MAX_FOLLOW_UPS]]

    def answer_for(self, round_records: Sequence[ToolCallRecord]) -> str | None:
        """The answer code gives for a round of results, or None for the model to answer.

        A round whose every call was parked: the parked sentence with each approval id once, in call order.
        """
        if not self.parked_answer or not round_records:
            return None
        if any(r.status != "pending_approval" or not r.approval_id for r in round_records):
            return None
        ids = list(dict.fromkeys(r.approval_id for r in round_records if r.approval_id))
        listed = ids[0] if len(ids) == 1 else f"{', '.join(ids[:-1])} and {ids[-1]}"
        return PARKED_ANSWER.format(ids=listed)


def policy_call(name: str, arguments: Mapping[str, Any]) -> FunctionCallContent:
    """A call the turn makes itself, in the form a model's call takes (a fresh id; ``plugin-function`` name)."""
    plugin, _, function = name.partition("-")
    return FunctionCallContent(
        id=f"policy_{secrets.token_hex(4)}",
        name=name,
        plugin_name=plugin,
        function_name=function,
        arguments=json.dumps(dict(arguments), ensure_ascii=False),
    )


def _is_read(kernel: Kernel, name: str) -> bool:
    """Whether ``name`` is one of ``kernel``'s functions and declared a read."""
    plugin, _, function = name.partition("-")
    try:
        return traits_of(kernel.get_function(plugin, function)).read_only
    except KernelException:
        return False


def _functions(kernel: Kernel) -> list[KernelFunction]:
    return [function for plugin in kernel.plugins.values() for function in plugin.functions.values()]


def _read_words(kernel: Kernel) -> dict[str, tuple[str, ...]]:
    """The reads of ``kernel`` that declare the words naming what only they answer, by full name."""
    declared = {function.fully_qualified_name: traits_of(function) for function in _functions(kernel)}
    return {name: traits.asked_by for name, traits in declared.items() if traits.read_only and traits.asked_by}


def _reads_pumps(made: Sequence[Call], tools: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any call ``made`` can speak for one pump: its tool takes a ``pump_id`` (used or not, fleet-wide)."""
    schemas = tool_schemas(tools)
    return any("pump_id" in (schemas.get(name, {}).get("properties") or {}) for name, _ in made)


def _advertised(kernel: Kernel) -> list[dict[str, Any]]:
    """The kernel's functions in the function-calling format the model sees."""
    return [kernel_function_metadata_to_function_call_format(m) for m in kernel.get_full_list_of_function_metadata()]


def _key(name: str, arguments: Mapping[str, Any]) -> str:
    return name + json.dumps({k: canonical_id(str(v)) for k, v in arguments.items()}, sort_keys=True)


def request_text(question: str, assistant_before: str | None) -> str:
    """What the operator's ``question`` asks for: itself, with the assistant's last message when it only agrees.

    "Yes, please" after "Want me to open a ticket to inspect PUMP-007?" asks for that ticket; a reply holding any word
    but agreement (`checks.vocabulary.AFFIRMATIVE_WORDS`) is read alone.
    """
    words = re.findall(r"[a-z']+", question.casefold())
    if assistant_before and words and all(word in AFFIRMATIVE_WORDS for word in words):
        return f"{question}\n{assistant_before}"
    return question
