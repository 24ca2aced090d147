"""An SK chat-completion service backed by llama.cpp in process (``llama-cpp-python``, the ``local`` extra).

How a model turn runs when tools are advertised (the strategy measured with ``pumpops eval``):

1. **Route.** Natively, from the conversation prompt itself (cached): the log-probability that the
   model opens its turn like a call (first token starting with ``<``, ``{`` or a fence) against
   ``tool_start_threshold``; above it the call is written greedily in the ``<tool_call>`` format.
   Near the line (below ``tool_start_threshold + borderline_margin``) the message's `Relevance`, its
   closeness to what the tools answer, settles it: at least ``relevance_threshold`` (the operator
   asked about pumps or the manuals' subjects) still gets a call below the threshold, since the 1.5B
   model otherwise answers some manual questions (a lockout procedure, NPSH) from its own memory;
   under ``off_topic_relevance`` (trivia, small talk) gets none just above it, where "What is the
   capital of France?" and a poem request scored. (A terse question after the plant's state, "Anything
   wrong?", scores as low as small talk: the turn reads the fleet summary before the model is asked,
   `turn.policies`.) Engines without that score fall back to a routing prompt (``no_tool`` or a tool name).
2. **Call.** Greedy decoding under grammars built from the tool schemas: one or two ``<tool_call>``
   blocks naming advertised tools, with schema-valid arguments, optional filters only as the
   conversation mentions them. The call is first written without a grammar and kept when the
   grammar would have allowed every token, less optional values nobody mentioned (`strict_tool_calls`:
   then it is the constrained greedy output, those values left out either way); otherwise the name and
   then the arguments are decoded under their grammars.
   The calls come back as `FunctionCallContent` items; the runner executes them (and the turn's follow-up
   calls, `turn.policies`, fill in what the operator named that they did not ask for).
3. **Answer.** With a response format (``format``, a JSON schema: `chat.response_format`), the answer is decoded
   under the grammar of that schema (`json_schema_grammar`) and no call is considered. Otherwise free generation,
   streamed token by token (the turn holds it back until its checks pass, and
   an answer that speaks for data it never read makes the turn read first: `turn.policies`). Tool results are read
   as compact text (`compact_result`: the same values, about a third fewer prompt tokens than JSON), because on two
   cores reading a result is most of a turn's time.

The runner draws a fence marker per turn and names it at the end of the system prompt, so every turn
would re-read that tail (about 30 tokens, a second here). The service fences with its own marker
(10 random letters, fewer tokens than hex digits), drawn once per service, instead: the system
prompt's fence lines and every result are re-marked with it, so the whole system prompt stays a
cached prefix across turns. Data written before the service started cannot know it, and the fence
words are neutralised inside data either way. The prompt cache on disk stops before the first fence
line, so the marker is never written there.

Inference runs in a worker thread that feeds an asyncio queue, so the event loop never blocks; one
inference at a time per loaded model. The boundary to llama.cpp is the small `CompletionEngine` protocol
(`chat.local.llama_engine`, which imports ``llama_cpp`` only when a model loads); tests drive the
service with a scripted engine.
"""

from __future__ import annotations

import asyncio
import secrets
import string
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import PrivateAttr
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_calling_utils import kernel_function_metadata_to_function_call_format
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import AuthorRole
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent
from semantic_kernel.contents.streaming_text_content import StreamingTextContent

from chat.local.grammar import (
    NAME_OPENING,
    TOOL_CALL_CLOSE,
    answer_grammar,
    call_hints,
    call_prefix,
    json_schema_grammar,
    route_grammar,
    tool_calls_grammar,
    tool_name_grammar,
)
from chat.local.history import conversation_text, last_user_text, to_prompt_messages
from chat.local.inference import Usage, generate
from chat.local.llama_engine import CompletionEngine
from chat.local.qwen_format import (
    ParsedCall,
    parse_tool_calls,
    render_prompt,
    routing_prompt,
    strict_tool_calls,
)
from chat.local.settings import LocalChatPromptExecutionSettings, Relevance, Route
from chat.mentions import Mentions, enum_words, identifiers
from kernel_setup.shaping import (
    FenceScrubber,
)

if TYPE_CHECKING:
    from semantic_kernel import Kernel
    from semantic_kernel.connectors.ai.function_call_choice_configuration import FunctionCallChoiceConfiguration
    from semantic_kernel.connectors.ai.function_choice_type import FunctionChoiceType

__all__ = ["LocalChatCompletion"]

MAX_PARALLEL_CALLS = 2
ROUTE_TOKENS = 24


def _letters_marker() -> str:
    """The service's fence marker: 10 random lowercase letters (47 bits).

    The local model reads it around every result; Qwen reads each digit as a token, so the runner's
    10 hex digits cost 8-9 tokens a line and these about 5.
    """
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(10))


class LocalChatCompletion(ChatCompletionClientBase):
    """Chat completion on llama.cpp with grammar-constrained tool calls and a streamed answer."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True

    _engine: CompletionEngine = PrivateAttr()
    _prompt_tools: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _marker: str = PrivateAttr(default_factory=_letters_marker)
    _relevance: Relevance | None = PrivateAttr(default=None)

    def __init__(
        self,
        engine: CompletionEngine,
        *,
        relevance: Relevance | None = None,
        ai_model_id: str = "local-gguf",
        service_id: str = "pumpops-chat",
    ):
        """Wrap ``engine`` (a `LlamaEngine`, or a scripted one in tests); ``relevance`` informs routing."""
        super().__init__(ai_model_id=ai_model_id, service_id=service_id)
        self._engine = engine
        self._relevance = relevance

    def get_prompt_execution_settings_class(self) -> type[PromptExecutionSettings]:
        """The settings class this service reads."""
        return LocalChatPromptExecutionSettings

    async def get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, **kwargs: Any
    ) -> list[ChatMessageContent]:
        """SK's call, the kernel's whole tool list kept for the prompt first (`_describe_tools`)."""
        self._describe_tools(kwargs.get("kernel"), settings)
        return await super().get_chat_message_contents(chat_history, settings, **kwargs)

    async def get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, **kwargs: Any
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        """SK's streaming call, the kernel's whole tool list kept for the prompt first (`_describe_tools`)."""
        self._describe_tools(kwargs.get("kernel"), settings)
        async for batch in super().get_streaming_chat_message_contents(chat_history, settings, **kwargs):
            yield batch

    def _describe_tools(self, kernel: Kernel | None, settings: PromptExecutionSettings) -> None:
        """The prompt describes every tool of ``kernel``, whichever of them this call may choose.

        A turn may narrow the choice (a function choice filter: writes nobody asked for), which narrows the calls'
        grammars, not the prompt: the tool list is the prompt's cached prefix, which a per-turn list would make the
        model read again (about a minute on two cores).
        """
        if kernel is not None and settings.function_choice_behavior is not None:
            described = [
                kernel_function_metadata_to_function_call_format(f) for f in kernel.get_full_list_of_function_metadata()
            ]
            if described:
                self._prompt_tools = described

    def _update_function_choice_settings_callback(
        self,
    ) -> Callable[[FunctionCallChoiceConfiguration, PromptExecutionSettings, FunctionChoiceType], None]:
        def update(config: FunctionCallChoiceConfiguration, settings: PromptExecutionSettings, _: Any) -> None:
            functions = config.available_functions or []
            tools = [kernel_function_metadata_to_function_call_format(f) for f in functions]
            if isinstance(settings, LocalChatPromptExecutionSettings):
                settings.tools = tools or None

        return update

    def _reset_function_choice_settings(self, settings: PromptExecutionSettings) -> None:
        if isinstance(settings, LocalChatPromptExecutionSettings):
            settings.tools = None

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        chunks: list[StreamingChatMessageContent] = []
        async for batch in self._inner_get_streaming_chat_message_contents(chat_history, settings):
            chunks.extend(batch)
        if not chunks:
            return [ChatMessageContent(role=AuthorRole.ASSISTANT, content="", ai_model_id=self.ai_model_id)]
        merged = reduce(lambda a, b: a + b, chunks)
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, items=list(merged.items), metadata=merged.metadata)]

    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, function_invoke_attempt: int = 0
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        if not isinstance(settings, LocalChatPromptExecutionSettings):
            settings = self.get_prompt_execution_settings_from_settings(settings)
        assert isinstance(settings, LocalChatPromptExecutionSettings)
        tools = settings.tools or []
        if tools and not _names(tools) <= _names(self._prompt_tools):  # a narrowed choice keeps the described list
            self._prompt_tools = tools
        # The tool list stays in the prompt even on a call without tools, so the cached prefix is reused.
        prompt = render_prompt(to_prompt_messages(chat_history, self._marker), self._prompt_tools)
        usage = Usage(prompt=await asyncio.to_thread(self._engine.count_tokens, prompt))
        last_role = chat_history.messages[-1].role if chat_history.messages else AuthorRole.USER
        # Tools are considered right after the user spoke; after tool results the model answers, unless
        # `route_after_results` (the 1.5B model then repeats its last call, a loop the runner stops).
        after_results = settings.routing and settings.route_after_results and last_role == AuthorRole.TOOL
        if tools and settings.format is None and (last_role == AuthorRole.USER or after_results):
            if calls := await self._opening(prompt, chat_history, tools, settings, usage):
                yield [self._calls_chunk(calls, function_invoke_attempt, usage)]
                return
        if settings.format is not None:  # the whole answer under the schema's grammar
            grammar = json_schema_grammar(settings.format)
            pieces = generate(self._engine, prompt, grammar, settings.max_tokens, settings, usage)
        else:
            pieces = generate(
                self._engine, prompt, answer_grammar(), settings.max_tokens, settings, usage, grammar_tokens=1
            )
        async for piece in _without_fences(pieces):
            yield [self._chunk([self._text_item(piece)], function_invoke_attempt)]
        yield [self._chunk([], function_invoke_attempt, usage=usage, finish="stop")]

    async def _opening(
        self,
        prompt: str,
        chat_history: ChatHistory,
        tools: Sequence[Mapping[str, Any]],
        settings: LocalChatPromptExecutionSettings,
        usage: Usage,
    ) -> list[ParsedCall]:
        """The calls the model opens its turn with (none: it answers)."""
        names = [str(t["function"]["name"]) for t in tools]
        said = Mentions.of(conversation_text(chat_history), nouns=enum_words(tools))
        # Routing and calls are decoded greedily: sampling only added calls nobody asked for (a second,
        # unrelated one) and varied arguments; the answer samples at the configured temperature.
        greedy = settings.model_copy(update={"temperature": 0.0})
        if not settings.routing:
            grammar = tool_calls_grammar(tools, max_calls=MAX_PARALLEL_CALLS, said=said)
            text = await self._text(prompt, grammar, settings.max_call_tokens, greedy, usage)
            return parse_tool_calls(text, tools, said)
        # Native routing: the model's own first-token mass on opening a call, from the cached prompt.
        route = await self._route(prompt, chat_history, tools, settings)
        if route is None:
            asking = routing_prompt(prompt, tools, last_user_text(chat_history))
            choice = (await self._text(asking, route_grammar(names), ROUTE_TOKENS, greedy, usage)).strip()
            usage.prompt += max(0, await asyncio.to_thread(self._engine.count_tokens, asking) - usage.prompt)
            return await self._calls_of(prompt, choice, tools, said, greedy, usage) if choice in names else []
        usage.completion += 1
        if not route.call:
            return []
        # The call's fixed opening goes in the prompt (read in one batch). First the whole call without a grammar,
        # kept if the grammar would have allowed it (`strict_tool_calls`).
        hints = call_hints(tools, said, identifiers(last_user_text(chat_history)))
        free = await self._text(prompt + NAME_OPENING, None, settings.max_call_tokens, greedy, usage, hints)
        written = NAME_OPENING + free.rstrip()
        if not written.endswith(TOOL_CALL_CLOSE):
            written += "\n" + TOOL_CALL_CLOSE  # its own closing tag is a special token, which reads back as no text
        calls = strict_tool_calls(written, tools, said, max_calls=MAX_PARALLEL_CALLS)
        # Otherwise constrained: the name under a grammar of the names, then its arguments.
        return calls or await self._named_calls(prompt, names, tools, said, greedy, usage)

    async def route(self, chat_history: ChatHistory, settings: LocalChatPromptExecutionSettings) -> Route | None:
        """How native routing decides the next turn of ``chat_history`` with ``settings.tools``; None without a scorer.

        The same decision a turn takes first when the operator has just spoken, without writing the call;
        `bench/routing_bench.py` reads it for many wordings.
        """
        tools = settings.tools or self._prompt_tools
        prompt = render_prompt(to_prompt_messages(chat_history, self._marker), tools)
        return await self._route(prompt, chat_history, tools, settings)

    async def _route(
        self,
        prompt: str,
        chat_history: ChatHistory,
        tools: Sequence[Mapping[str, Any]],
        settings: LocalChatPromptExecutionSettings,
    ) -> Route | None:
        """Whether the turn opens with a call: the start score decides, and near the line the message's relevance.

        Well above the threshold (by ``borderline_margin``) the model's own opening decides. Below that, a terse
        question after the plant's state (`asks_for_reassurance`, with ``status_questions``) calls a read; otherwise
        the relevance of the operator's last message settles it: at least ``relevance_threshold`` calls whatever the
        score, under ``off_topic_relevance`` does not call, between them the threshold decides.
        """
        scorer = getattr(self._engine, "tool_start_logprob", None)
        if scorer is None:
            return None
        start = await asyncio.to_thread(scorer, prompt)
        if start >= settings.tool_start_threshold + settings.borderline_margin:
            return Route(start=start, relevance=None, call=True)
        if not chat_history.messages or chat_history.messages[-1].role != AuthorRole.USER:
            return Route(start=start, relevance=None, call=start >= settings.tool_start_threshold)
        message = chat_history.messages[-1].content or ""  # the operator's, as checked above
        if self._relevance is None:
            return Route(start=start, relevance=None, call=start >= settings.tool_start_threshold)
        relevance = await self._relevance(message, tools)
        call = relevance >= settings.relevance_threshold or (
            start >= settings.tool_start_threshold and relevance >= settings.off_topic_relevance
        )
        return Route(start=start, relevance=relevance, call=call)

    async def _named_calls(
        self,
        prompt: str,
        names: Sequence[str],
        tools: Sequence[Mapping[str, Any]],
        said: Mentions,
        greedy: LocalChatPromptExecutionSettings,
        usage: Usage,
    ) -> list[ParsedCall]:
        """A call written under grammars: the name among ``names`` (the advertised tools'), then its arguments."""
        named = await self._text(prompt + NAME_OPENING, tool_name_grammar(names), ROUTE_TOKENS, greedy, usage)
        choice = named.rstrip('"')
        return await self._calls_of(prompt, choice, tools, said, greedy, usage) if choice in names else []

    async def _calls_of(
        self,
        prompt: str,
        choice: str,
        tools: Sequence[Mapping[str, Any]],
        said: Mentions,
        greedy: LocalChatPromptExecutionSettings,
        usage: Usage,
    ) -> list[ParsedCall]:
        """The calls that open with ``choice``: its arguments (and any second call) under the tools' grammar."""
        head = call_prefix(choice)
        grammar = tool_calls_grammar(tools, max_calls=MAX_PARALLEL_CALLS, first=choice, said=said)
        text = head + await self._text(prompt + head, grammar, greedy.max_call_tokens, greedy, usage)
        return parse_tool_calls(text, tools, said)

    def _text_item(self, piece: str) -> StreamingTextContent:
        return StreamingTextContent(choice_index=0, text=piece, ai_model_id=self.ai_model_id)

    def _calls_chunk(self, calls: Sequence[ParsedCall], attempt: int, usage: Usage) -> StreamingChatMessageContent:
        items = [
            FunctionCallContent(
                ai_model_id=self.ai_model_id,
                id=f"call_{secrets.token_hex(4)}",
                index=position,
                name=call.name,
                arguments=call.arguments,
            )
            for position, call in enumerate(calls)
        ]
        return self._chunk(items, attempt, usage=usage, finish="tool_calls")

    def _chunk(
        self, items: list[Any], attempt: int, *, usage: Usage | None = None, finish: str | None = None
    ) -> StreamingChatMessageContent:
        metadata = {"usage": usage.as_completion_usage()} if usage is not None else {}
        return StreamingChatMessageContent(
            role=AuthorRole.ASSISTANT,
            choice_index=0,
            items=items,
            ai_model_id=self.ai_model_id,
            metadata=metadata,
            function_invoke_attempt=attempt,
            finish_reason=finish,  # type: ignore[arg-type]
        )

    async def _text(
        self,
        prompt: str,
        grammar: str | None,
        max_tokens: int,
        settings: LocalChatPromptExecutionSettings,
        usage: Usage,
        hints: Sequence[str] = (),
    ) -> str:
        pieces = generate(self._engine, prompt, grammar, max_tokens, settings, usage, hints=hints)
        return "".join([piece async for piece in pieces])


def _names(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str(tool.get("function", {}).get("name")) for tool in tools}


async def _without_fences(pieces: AsyncGenerator[str, None]) -> AsyncGenerator[str, None]:
    """An answer's pieces without fence lines (`FenceScrubber`): the model copies them from its prompt."""
    scrubber = FenceScrubber()
    try:
        async for piece in pieces:
            if shown := scrubber.feed(piece):
                yield shown
        if tail := scrubber.flush():
            yield tail
    finally:
        await pieces.aclose()
