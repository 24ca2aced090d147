"""A turn's spans: ``invoke_agent pumpops`` for the turn and ``chat {model}`` for each model call (GenAI conventions).

The tool calls' ``execute_tool`` spans come from the kernel's trace filter (`kernel_setup.filters.tracing`), children
of the turn's span. The question and answer go on the turn's span only with ``Tracing.IncludeContent``.
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Span
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent
from semantic_kernel.contents.utils.finish_reason import FinishReason

from chat.provider import AutoChatCompletion
from kernel_setup.tracing import (
    AGENT,
    AGENT_NAME,
    CONVERSATION_ID,
    DOOR,
    FINISH_REASONS,
    INPUT_MESSAGES,
    INPUT_TOKENS,
    OPERATION,
    OUTPUT_MESSAGES,
    OUTPUT_TOKENS,
    PRINCIPAL,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    Tracing,
)
from turn.events import TurnResult, Usage

TURN_SPAN = f"invoke_agent {AGENT}"


def turn_attributes(tracing: Tracing, question: str, session: str, principal: str, door: str) -> dict[str, Any]:
    """The ``invoke_agent`` span's attributes at the start of a turn."""
    attributes: dict[str, Any] = {
        OPERATION: "invoke_agent",
        AGENT_NAME: AGENT,
        CONVERSATION_ID: session,
        PRINCIPAL: principal,
        DOOR: door,
    }
    if tracing.include_content:
        attributes[INPUT_MESSAGES] = _messages("user", question)
    return attributes


def finish_turn(span: Span, tracing: Tracing, result: TurnResult) -> None:
    """The turn's totals (and, with content, its answer) on its span."""
    span.set_attribute(INPUT_TOKENS, result.usage.prompt_tokens)
    span.set_attribute(OUTPUT_TOKENS, result.usage.completion_tokens)
    span.set_attribute("pumpops.turn.degraded", result.degraded)
    if tracing.include_content:
        span.set_attribute(OUTPUT_MESSAGES, _messages("assistant", result.answer))


def chat_span(service: ChatCompletionClientBase) -> tuple[str, dict[str, Any]]:
    """The name and attributes of a ``chat`` span on ``service`` (for `Chat.Provider` auto: the chosen one's)."""
    if isinstance(service, AutoChatCompletion) and service.chosen is not None:
        service = service.chosen
    model = service.ai_model_id or "unknown"
    provider = "ollama" if "ollama" in type(service).__module__.lower() else "llama.cpp"
    return f"chat {model}", {OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: model}


def finish_chat(
    span: Span, service: ChatCompletionClientBase, message: ChatMessageContent, before: tuple[int, int], usage: Usage
) -> None:
    """One model call's model, token usage (what ``usage`` grew by) and finish reason on its span.

    The model is named again: `Chat.Provider` auto chooses its provider on the first request.
    """
    name, attributes = chat_span(service)
    span.update_name(name)
    span.set_attributes(attributes)
    span.set_attribute(INPUT_TOKENS, usage.prompt_tokens - before[0])
    span.set_attribute(OUTPUT_TOKENS, usage.completion_tokens - before[1])
    model = (message.metadata or {}).get("model")
    if isinstance(model, str):
        span.set_attribute(RESPONSE_MODEL, model)
    if message.finish_reason is not None:
        span.set_attribute(FINISH_REASONS, [message.finish_reason.value])


def finish_reason_of(chunks: list[StreamingChatMessageContent]) -> FinishReason | None:
    """Why the model stopped: the connector's finish reason, else Ollama's ``done_reason`` on the last chunk."""
    reason = next((c.finish_reason for c in reversed(chunks) if c.finish_reason is not None), None)
    if reason is not None:
        return reason
    done = getattr(chunks[-1].inner_content, "done_reason", None) if chunks else None
    try:
        return None if done is None else FinishReason(done)
    except ValueError:
        return None


def _messages(role: str, text: str) -> str:
    """A message in the conventions' JSON form, as span text."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)
