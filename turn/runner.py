"""The one turn runner: streams events, calls tools through the kernel, and bounds every turn.

Each model call advertises the tools with auto-invocation off, so this runner decides how calls
run: reads of one model turn run concurrently, writes one at a time in call order, results go
back in call order (`turn.calls` runs them, each through the kernel's filters, or refuses and audits it).
The turn's policies act around the model's own choices (`turn.policies`). Bounds: model calls, tokens, wall clock, loop
detection; hitting one ends the turn with ``degraded`` and the reason, never a hang.

Each result is added once to the turn's `checks.evidence.Evidence` as it arrives; the answer checks read that.
With ``Agent.StructuredAnswers`` the model's answer after data is asked for once more as JSON citing that evidence's
records, and code writes the answer from them (`turn.structured`).
Nothing failing is shown: the text of every model round is held back, never streamed as it comes. A round that
calls tools is not the answer, and its text is dropped; the answer round is checked when it ends
(`turn.acting.settle_answer`) and then released, in the pieces the model streamed when it passed as written, or
as one piece when the checks retried, replaced or refused it. The operator waits for the whole answer, and in
exchange every answer shown has passed its checks, which need the whole answer (an alarm told in the last
sentence excuses an all-clear in the first).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import AuthorRole, ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent

from checks.evidence import Evidence
from checks.scope import REFUSAL, domain_words
from governance.audit_log import RejectionRecorder
from governance.identity import CallContext, acting_as
from kernel_setup.filters.turn_guard import TurnGuard, guarding
from kernel_setup.settings import AgentSettings
from kernel_setup.shaping import STATUS_QUESTION, fence, new_marker, system_prompt, truncate
from kernel_setup.tracing import Tracing
from turn.acting import Settled, TurnFacts, settle_answer
from turn.calls import ToolCalls
from turn.errors import ChatServiceError
from turn.events import (
    Correction,
    ModelCallFinished,
    ModelCallStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
    TurnEvent,
    TurnFinished,
    TurnResult,
    Usage,
)
from turn.messages import (
    arguments_of,
    items_text,
    read_texts,
    refenced,
    tool_message,
)
from turn.model_calls import ModelCalls
from turn.policies import TurnPolicies, request_text
from turn.sessions import SessionStore, new_session_id, trim_history
from turn.structured import structured_answer
from turn.tracing import TURN_SPAN, finish_turn, turn_attributes
from turn.units import Conversion, asked_conversions


@dataclass
class _Turn:
    """Mutable bookkeeping of one turn."""

    session: str
    marker: str
    deadline: float
    usage: Usage = field(default_factory=Usage)
    records: list[ToolCallRecord] = field(default_factory=list)
    round_records: list[ToolCallRecord] = field(default_factory=list)  # the last round's calls, in call order
    evidence: Evidence = field(default_factory=Evidence)
    degraded_reason: str | None = None
    answer: str = ""  # the answer to check, once a round gave one
    pieces: list[TextDelta] = field(default_factory=list)  # the answer as the model streamed it, held back
    conversions: tuple[Conversion, ...] = ()  # the units the operator asked for (`turn.units`)
    domain: frozenset[str] = frozenset()  # the words of the plant: the tools' and the session's (`checks.scope`)
    structured: list[Correction] = field(default_factory=list)  # what the structured answer step did
    asked: str = ""  # what the operator asked for: the question, with what it agreed to (`policies.request_text`)
    uncallable: list[str] = field(default_factory=list)  # writes not asked for: the model is not offered them


class TurnRunner:
    """Runs one question at a time for a session and emits `TurnEvent`s."""

    def __init__(
        self,
        kernel: Kernel,
        service: ChatCompletionClientBase,
        agent: AgentSettings,
        sessions: SessionStore,
        *,
        execution_settings: PromptExecutionSettings,
        rejections: RejectionRecorder | None = None,
        num_ctx: int | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self._kernel = kernel
        self._tracing = tracing or Tracing.off()
        self._model = ModelCalls(kernel, service, execution_settings, num_ctx, self._tracing)
        self._agent = agent
        self._sessions = sessions
        self._calls = ToolCalls(kernel, rejections)
        self._policies = TurnPolicies(
            status_questions=agent.status_questions,
            claim_check=agent.claim_check,
            follow_up_calls=agent.follow_up_calls,
            parked_answer=agent.parked_answer,
            writes_asked_for=agent.writes_asked_for,
        )

    async def run(
        self, question: str, *, session: str | None = None, principal: str | CallContext = "operator"
    ) -> TurnResult:
        """Run a turn to the end and return its result."""
        result: TurnResult | None = None
        async for event in self.stream(question, session=session, principal=principal):
            if isinstance(event, TurnFinished):
                result = event.result
        assert result is not None
        return result

    async def stream(
        self,
        question: str,
        *,
        session: str | None = None,
        principal: str | CallContext = "operator",
        door: str = "chat",
    ) -> AsyncIterator[TurnEvent]:
        """Run a turn, yielding events as they happen (the last is `TurnFinished`); traced as ``invoke_agent``.

        ``principal`` is the door's caller (a `CallContext`, its door used and ``door`` ignored), or a bare name
        for an unproven caller of ``door`` (an integrator's code).

        Raises:
            ChatServiceError: the model service failed; the message says what to do.
        """
        session_id = session or new_session_id()
        caller = principal if isinstance(principal, CallContext) else CallContext(principal=principal, door=door)
        attributes = turn_attributes(self._tracing, question, session_id, caller.audit_name, caller.door)
        with self._tracing.span(TURN_SPAN, attributes) as span:
            async for event in self._turn(question, session_id, caller):
                if span is not None and isinstance(event, TurnFinished):
                    finish_turn(span, self._tracing, event.result)
                yield event

    async def _turn(self, question: str, session_id: str, caller: CallContext) -> AsyncIterator[TurnEvent]:
        turn = _Turn(session=session_id, marker=new_marker(), deadline=time.monotonic() + self._agent.deadline_seconds)
        turn.conversions = asked_conversions(question)
        chat = await self._history(session_id, turn.marker)
        earlier = read_texts(chat)  # what the session read before this question
        turn.domain = domain_words([*self._tool_descriptions(), *earlier])
        said = [m for m in chat.messages if m.role == AuthorRole.ASSISTANT and (m.content or "").strip()]
        turn.asked = request_text(question, said[-1].content if said else None)
        turn.uncallable = self._policies.uncallable(turn.asked, self._kernel)
        chat.add_message(user := ChatMessageContent(role=AuthorRole.USER, content=question))
        new_messages: list[ChatMessageContent] = [user]
        guard = TurnGuard()
        with acting_as(replace(caller, session=session_id)), guarding(guard):
            if opening := self._policies.opening_calls(question, self._kernel):
                async for event in self._policy_round(opening, chat, new_messages, turn, note=STATUS_QUESTION):
                    yield event
            async for event in self._rounds(question, chat, new_messages, turn, guard):
                yield event
            answer = turn.answer
            # An id may come from earlier in the session: the operator's messages or the tools' results.
            facts = TurnFacts(turn.evidence, question, read_texts(chat), turn.domain)
            settled = await settle_answer(answer, facts, lambda request: self._ask_again(chat, answer, request, turn))
        for delta in _released(settled, turn.pieces):
            yield delta
        if settled.answer:
            new_messages.append(ChatMessageContent(role=AuthorRole.ASSISTANT, content=settled.answer))
        await self._sessions.append(session_id, caller.principal, new_messages)
        yield TurnFinished(self._result(settled, turn, turn.structured))

    async def _rounds(
        self, question: str, chat: ChatHistory, new_messages: list[ChatMessageContent], turn: _Turn, guard: TurnGuard
    ) -> AsyncIterator[TurnEvent]:
        """The model's rounds, up to the answer (held in ``turn.answer`` and ``turn.pieces``) or a bound."""
        for number in range(1, self._agent.max_model_calls + 1):
            last = number == self._agent.max_model_calls
            yield ModelCallStarted(number)
            try:
                message, held = await self._model.held(chat, with_tools=not last, turn=turn, excluded=turn.uncallable)
            except TimeoutError:
                turn.degraded_reason = f"deadline of {self._agent.deadline_seconds:g} s reached"
                return
            yield ModelCallFinished(
                number, turn.usage.prompt_tokens, turn.usage.completion_tokens, turn.usage.estimated
            )
            calls = [item for item in message.items if isinstance(item, FunctionCallContent)]
            # An answer written before this turn read any data: judged against what the session read before.
            unread = not (calls or last or turn.records)
            earlier = [items_text(m) for m in chat.messages if m.role == AuthorRole.TOOL] if unread else []
            claim = self._policies.claim_calls(message, question, self._kernel, turn.domain, earlier) if unread else []
            if calls and not turn.evidence.results and self._policies.declines_calls(question, turn.domain):
                # Off-topic: no plant data is read for it; the answer checks give the scoped refusal.
                turn.answer, turn.pieces = REFUSAL, []
                return
            if calls:
                chat.add_message(message)
                new_messages.append(message)
                async for event in self._policy_rounds(question, calls, chat, new_messages, turn):
                    yield event
                if (coded := self._policies.answer_for(turn.round_records)) is not None:
                    turn.answer, turn.pieces = coded, []  # checked like any answer before it is shown
                    return
            elif claim:
                # An answer before any data that speaks for the data: never shown; the turn reads, and asks again.
                async for event in self._policy_round(claim, chat, new_messages, turn, note=STATUS_QUESTION):
                    yield event
            else:  # the answer round; a round that calls tools is not the answer, and its text is dropped
                turn.answer, turn.pieces = message.content or "", held
                if not turn.answer.strip():
                    turn.degraded_reason = turn.degraded_reason or "the model returned an empty answer"
                elif self._agent.structured_answers:  # the model cites records; code writes the answer
                    shaped = await structured_answer(
                        turn.evidence, turn.answer, lambda ask, schema: self._ask_formatted(chat, ask, schema, turn)
                    )
                    if shaped.answer != turn.answer:
                        turn.answer, turn.pieces = shaped.answer, []  # shown whole once checked
                    turn.structured = shaped.corrections
                return
            if (bound := self._bound_reached(turn, guard)) is not None:
                turn.degraded_reason = bound
                return
            if number == self._agent.max_model_calls - 1:
                turn.degraded_reason = (
                    f"model call limit of {self._agent.max_model_calls} reached; the last call had no tools"
                )

    async def _policy_rounds(
        self,
        question: str,
        calls: Sequence[FunctionCallContent],
        chat: ChatHistory,
        new_messages: list[ChatMessageContent],
        turn: _Turn,
    ) -> AsyncIterator[TurnEvent]:
        """Run the model's ``calls``, then the follow-up reads the turn's policies add (`turn.policies`)."""
        async for event in self._run_calls(calls, chat, new_messages, turn):
            yield event
        made = [(r.name, r.arguments) for r in turn.records]
        if follow_up := self._policies.follow_ups(question, made, self._kernel):
            async for event in self._policy_round(follow_up, chat, new_messages, turn):
                yield event

    async def _policy_round(
        self,
        calls: Sequence[FunctionCallContent],
        chat: ChatHistory,
        new_messages: list[ChatMessageContent],
        turn: _Turn,
        *,
        note: str | None = None,
    ) -> AsyncIterator[TurnEvent]:
        """Run calls a policy made: they enter the conversation as the assistant's calls.

        ``note`` (`kernel_setup.shaping.NOTE_KEY`) travels with their results, for a connector that words its
        model's notes by it.
        """
        message = ChatMessageContent(role=AuthorRole.ASSISTANT, items=list(calls))
        chat.add_message(message)
        new_messages.append(message)
        async for event in self._run_calls(calls, chat, new_messages, turn, note=note):
            yield event

    async def _history(self, session_id: str, marker: str) -> ChatHistory:
        """The system prompt and the session's stored history, trimmed and fenced anew."""
        stored = await self._sessions.load(session_id)
        chat = ChatHistory(system_message=system_prompt(marker))
        chat.messages.extend(refenced(trim_history(stored, self._agent.history_tokens), marker))
        return chat

    def _bound_reached(self, turn: _Turn, guard: TurnGuard) -> str | None:
        """Why the turn must stop after a round of tool calls, or None."""
        if guard.repeated is not None:
            return f"loop detected: {guard.repeated} repeated with the same arguments"
        if turn.usage.prompt_tokens + turn.usage.completion_tokens > self._agent.token_budget:
            return f"token budget of {self._agent.token_budget} exceeded"
        if time.monotonic() > turn.deadline:
            return f"deadline of {self._agent.deadline_seconds:g} s reached"
        return None

    def _result(self, settled: Settled, turn: _Turn, structured: Sequence[Correction] = ()) -> TurnResult:
        review = settled.review
        return TurnResult(
            answer=settled.answer,
            tool_calls=turn.records,
            degraded=turn.degraded_reason is not None,
            reason=turn.degraded_reason,
            ungrounded=[*review.ungrounded_numbers, *review.ungrounded_ids],
            misattributed_numbers=review.misattributed_numbers,
            overlooked_alarms=review.overlooked_alarms,
            misstated_severities=review.misstated_severities,
            misstated_comparisons=review.misstated_comparisons,
            corrections=[*structured, *settled.corrections],
            usage=turn.usage,
            session=turn.session,
        )

    async def _ask_again(self, chat: ChatHistory, answer: str, request: str, turn: _Turn) -> str | None:
        """One more model call without tools, after the stopped ``answer`` and the checks' ``request``."""
        if time.monotonic() >= turn.deadline:
            return None
        chat.add_message(ChatMessageContent(role=AuthorRole.ASSISTANT, content=answer))
        return await self._ask_formatted(chat, request, None, turn)  # None: the evidence answers instead

    async def _ask_formatted(
        self, chat: ChatHistory, request: str, schema: Mapping[str, Any] | None, turn: _Turn
    ) -> str | None:
        """One more model call without tools after the user message ``request``, its answer matching ``schema``."""
        if time.monotonic() >= turn.deadline:
            return None
        chat.add_message(ChatMessageContent(role=AuthorRole.USER, content=request))
        try:
            message, _ = await self._model.held(chat, with_tools=False, turn=turn, schema=schema)
        except (TimeoutError, ChatServiceError):
            return None
        return message.content

    def _tool_descriptions(self) -> list[str]:
        texts = []
        for metadata in self._kernel.get_full_list_of_function_metadata():
            texts.append(metadata.description or "")
            texts.extend(p.description or "" for p in metadata.parameters)
        return texts

    async def _run_calls(
        self,
        calls: Sequence[FunctionCallContent],
        chat: ChatHistory,
        new_messages: list[ChatMessageContent],
        turn: _Turn,
        *,
        note: str | None = None,
    ) -> AsyncIterator[TurnEvent]:
        for call in calls:
            yield ToolCallStarted(call.id or "", call.name or "", arguments_of(call))
        done: dict[str, tuple[str, ToolCallRecord]] = {}
        async for call, text, record in self._calls.run_round(
            calls,
            turn.usage.model_calls,
            turn.evidence,
            turn.conversions,
            refuse=lambda call: self._policies.unasked_write(call, turn.asked, self._kernel),
        ):
            done[call.id or ""] = (text, record)
            yield ToolCallFinished(call.id or "", record)
        turn.round_records = []
        for call in calls:  # results enter the history in call order, each naming its tool
            text, record = done[call.id or ""]
            turn.records.append(record)
            turn.round_records.append(record)
            capped = truncate(text, self._agent.max_tool_result_chars)
            chat.add_message(tool_message(call, fence(capped, turn.marker), record.status, note))
            new_messages.append(tool_message(call, capped))  # stored unfenced; fenced anew when replayed


def _released(settled: Settled, pieces: list[TextDelta]) -> list[TextDelta]:
    """The answer as shown: in the pieces streamed when shown as written (and they are what was checked), else whole."""
    as_written = not settled.changed and "".join(p.text for p in pieces) == settled.answer
    return pieces if as_written else [TextDelta(settled.answer)] if settled.answer else []
