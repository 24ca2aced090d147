"""A turn's model calls: each one streamed request, traced as ``chat {model}`` (`turn.tracing`).

The tools are advertised with auto-invocation off; the call is bounded by the turn's deadline and its tokens are
counted into the turn's usage.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import reduce
from typing import Any, Protocol

import httpx
import ollama
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import AuthorRole, ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent
from semantic_kernel.exceptions import KernelException, ServiceException

from chat.response_format import with_response_format
from kernel_setup.tracing import Tracing
from turn.errors import ChatServiceError
from turn.events import TextDelta, Usage
from turn.messages import items_text
from turn.tokens import count_usage, estimate_tokens
from turn.tracing import chat_span, finish_chat, finish_reason_of


class TurnBookkeeping(Protocol):
    """What a model call reads and updates of its turn."""

    usage: Usage
    deadline: float  # time.monotonic() by which the turn ends
    degraded_reason: str | None


class ModelCalls:
    """The model calls of a turn runner, on one chat service."""

    def __init__(
        self,
        kernel: Kernel,
        service: ChatCompletionClientBase,
        execution_settings: PromptExecutionSettings,
        num_ctx: int | None,
        tracing: Tracing,
    ) -> None:
        self._kernel = kernel
        self._service = service
        self._execution_settings = execution_settings
        self._num_ctx = num_ctx
        self._tracing = tracing

    async def held(
        self,
        chat: ChatHistory,
        *,
        with_tools: bool,
        turn: TurnBookkeeping,
        schema: Mapping[str, Any] | None = None,
        excluded: Sequence[str] = (),
    ) -> tuple[ChatMessageContent, list[TextDelta]]:
        """One model call's message and its text, held back: shown only once the answer has passed its checks.

        ``excluded``: tools (full names) the model may not call this time (SK's function choice filter; each
        connector narrows its model's choice by it).
        """
        message: ChatMessageContent | None = None
        held: list[TextDelta] = []
        async for item in self.stream(chat, with_tools=with_tools, turn=turn, schema=schema, excluded=excluded):
            if isinstance(item, TextDelta):
                held.append(item)
            else:
                message = item
        assert message is not None
        return message, held

    async def stream(
        self,
        chat: ChatHistory,
        *,
        with_tools: bool,
        turn: TurnBookkeeping,
        schema: Mapping[str, Any] | None = None,
        excluded: Sequence[str] = (),
    ) -> AsyncIterator[TextDelta | ChatMessageContent]:
        """One model call, traced as ``chat {model}``: its text as it streams, then its whole message.

        Raises:
            TimeoutError: the turn's deadline passed.
            ChatServiceError: the model service failed; the message says what to do.
        """
        before = (turn.usage.prompt_tokens, turn.usage.completion_tokens)
        with self._tracing.span(*chat_span(self._service), current=False) as span:
            async for item in self._streamed(chat, with_tools=with_tools, turn=turn, schema=schema, excluded=excluded):
                if span is not None and isinstance(item, ChatMessageContent):
                    finish_chat(span, self._service, item, before, turn.usage)
                yield item

    async def _streamed(
        self,
        chat: ChatHistory,
        *,
        with_tools: bool,
        turn: TurnBookkeeping,
        schema: Mapping[str, Any] | None,
        excluded: Sequence[str],
    ) -> AsyncIterator[TextDelta | ChatMessageContent]:
        settings = self._execution_settings.model_copy(deep=True)
        if schema is not None:
            settings = with_response_format(settings, schema)
        filters = {"excluded_functions": list(excluded)} if excluded else None
        settings.function_choice_behavior = (
            FunctionChoiceBehavior.Auto(auto_invoke=False, filters=filters) if with_tools else None  # type: ignore[arg-type]
        )
        chunks: list[StreamingChatMessageContent] = []
        sent_estimate = estimate_tokens("".join(str(m.content or "") + items_text(m) for m in chat.messages))
        try:
            async with asyncio.timeout(max(0.0, turn.deadline - time.monotonic())):
                async for batch in self._service.get_streaming_chat_message_contents(
                    chat, settings, kernel=self._kernel
                ):
                    for chunk in batch:
                        chunks.append(chunk)
                        if chunk.content and not any(isinstance(i, FunctionCallContent) for i in chunk.items):
                            yield TextDelta(chunk.content)
        except TimeoutError:
            raise
        except (ServiceException, KernelException, ollama.ResponseError, httpx.HTTPError, OSError, ValueError) as exc:
            raise ChatServiceError.of(exc) from exc
        turn.usage.model_calls += 1
        if not chunks:
            yield ChatMessageContent(role=AuthorRole.ASSISTANT, content="")
            return
        message = reduce(lambda a, b: a + b, chunks)
        written = estimate_tokens((message.content or "") + items_text(message))
        truncated = count_usage(
            turn.usage, (message.metadata or {}).get("usage"), sent_estimate, written, self._num_ctx
        )
        turn.degraded_reason = turn.degraded_reason or truncated
        yield ChatMessageContent(
            role=AuthorRole.ASSISTANT,
            items=list(message.items),
            metadata=message.metadata,
            finish_reason=finish_reason_of(chunks),
        )
