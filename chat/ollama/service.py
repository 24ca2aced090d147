"""SK's `OllamaChatCompletion` with the wire fixes PumpOps needs, by subclassing (never by patching SK).

SK 1.45 + ollama 0.6 gaps fixed here:
- parsed tool calls carry no id or index (results then all say "unknown", and streamed calls that
  arrive in separate chunks are merged into one): `_parse_tool_calls` assigns ``call_<n>`` ids and
  the call's position;
- tool results go back as ``str(result)`` without ``tool_name``, one per message, in completion
  order, and assistant tool calls lose their plugin prefix: `_prepare_chat_history_for_request`
  sends every result in call order, named, as JSON, and the full ``plugin-function`` names;
- a model that prints a call as text instead of a structured call: recovered only when the whole
  message is exactly one JSON object ``{"name": <listed tool>, "arguments": {...}}``.

A request's response format (`chat.response_format`) is SK's own ``format`` field, which SK 1.45 passes to the
server as is: Ollama (0.5 and later) decodes the answer under the JSON schema given there.

The private methods overridden are pinned by canary tests (tests/chat/ollama/test_ollama_canary.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from functools import reduce
from typing import Any

from ollama._types import Message
from pydantic import PrivateAttr
from semantic_kernel.connectors.ai.ollama.ollama_prompt_execution_settings import OllamaChatPromptExecutionSettings
from semantic_kernel.connectors.ai.ollama.services.ollama_chat_completion import OllamaChatCompletion
from semantic_kernel.connectors.ai.ollama.services.utils import MESSAGE_CONVERTERS
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import AuthorRole
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.function_result_content import FunctionResultContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent
from semantic_kernel.contents.streaming_text_content import StreamingTextContent
from semantic_kernel.contents.text_content import TextContent

from kernel_setup.shaping import result_text

MISSING_RESULT = json.dumps({"error": "No result was recorded for this tool call."})


def advertised_tool_names(settings: Any) -> set[str]:
    """Names of the tools a request advertises (``plugin-function``)."""
    names: set[str] = set()
    for tool in getattr(settings, "tools", None) or []:
        function = tool.get("function", {}) if isinstance(tool, Mapping) else {}
        if isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def parse_text_tool_call(text: str | None, tool_names: set[str]) -> tuple[str, dict[str, Any]] | None:
    """Return ``(name, arguments)`` only when the whole text is one JSON call of a listed tool.

    JSON quoted inside prose or data, a fenced block, extra keys, or an unknown name: never a call.
    """
    if not text or not tool_names:
        return None
    stripped = text.strip()
    if not (stripped.startswith("{") and stripped.endswith("}")):
        return None
    try:
        obj = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(obj, dict) or set(obj) != {"name", "arguments"}:
        return None
    name, arguments = obj["name"], obj["arguments"]
    if not isinstance(name, str) or name not in tool_names or not isinstance(arguments, dict):
        return None
    return name, arguments


class HardenedOllamaChatCompletion(OllamaChatCompletion):
    """`OllamaChatCompletion` with call ids, ordered and named tool results, and strict text-call recovery."""

    _call_ids: Any = PrivateAttr(default_factory=lambda: itertools.count(1))

    def _next_call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    def _recovered_call(self, name: str, arguments: dict[str, Any]) -> FunctionCallContent:
        return FunctionCallContent(
            ai_model_id=self.ai_model_id,
            id=self._next_call_id(),
            index=0,
            name=name,
            arguments=arguments,
            metadata={"recovered_from_text": True},
        )

    def _parse_tool_calls(self, tool_calls: Sequence[Message.ToolCall] | None, items: list[Any]) -> None:
        if not tool_calls:
            return
        position = sum(1 for item in items if isinstance(item, FunctionCallContent))
        for tool_call in tool_calls:
            items.append(
                FunctionCallContent(
                    inner_content=tool_call,
                    ai_model_id=self.ai_model_id,
                    id=self._next_call_id(),
                    index=position,
                    name=tool_call.function.name,
                    arguments=tool_call.function.arguments,
                )
            )
            position += 1

    def _prepare_chat_history_for_request(
        self, chat_history: ChatHistory, role_key: str = "role", content_key: str = "content"
    ) -> list[Message]:
        out: list[Message] = []
        messages = chat_history.messages
        i = 0
        while i < len(messages):
            message = messages[i]
            calls = [item for item in message.items if isinstance(item, FunctionCallContent)]
            if message.role == AuthorRole.ASSISTANT and calls:
                out.append(_assistant_message(message, calls))
                j = i + 1
                results: list[FunctionResultContent] = []
                while j < len(messages) and messages[j].role == AuthorRole.TOOL:
                    results.extend(item for item in messages[j].items if isinstance(item, FunctionResultContent))
                    j += 1
                out.extend(_ordered_tool_messages(calls, results))
                i = j
                continue
            if message.role == AuthorRole.TOOL:
                for frc in (item for item in message.items if isinstance(item, FunctionResultContent)):
                    out.append(Message(role="tool", content=result_text(frc.result), tool_name=frc.name))
                i += 1
                continue
            out.append(MESSAGE_CONVERTERS[message.role](message))
            i += 1
        return out

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        if not isinstance(settings, OllamaChatPromptExecutionSettings):
            settings = self.get_prompt_execution_settings_from_settings(settings)
        completions = await super()._inner_get_chat_message_contents(chat_history, settings)
        names = advertised_tool_names(settings)
        for completion in completions:
            if any(isinstance(item, FunctionCallContent) for item in completion.items):
                continue
            if not all(isinstance(item, TextContent) for item in completion.items):
                continue
            parsed = parse_text_tool_call(completion.content, names)
            if parsed:
                completion.items = [self._recovered_call(*parsed)]
        return completions

    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, function_invoke_attempt: int = 0
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        if not isinstance(settings, OllamaChatPromptExecutionSettings):
            settings = self.get_prompt_execution_settings_from_settings(settings)
        names = advertised_tool_names(settings)
        held: list[list[StreamingChatMessageContent]] = []
        text = ""
        holding = bool(names)
        position = 0
        async for chunk in super()._inner_get_streaming_chat_message_contents(
            chat_history, settings, function_invoke_attempt
        ):
            for message in chunk:
                for item in message.items:
                    if isinstance(item, FunctionCallContent):
                        item.index = position
                        position += 1
            if not holding:
                yield chunk
                continue
            # Hold text back while it could still be one JSON call printed as text.
            has_call = any(isinstance(item, FunctionCallContent) for m in chunk for item in m.items)
            text += "".join(i.text or "" for m in chunk for i in m.items if isinstance(i, StreamingTextContent))
            held.append(chunk)
            if has_call or (text.strip() and not text.lstrip().startswith("{")):
                holding = False
                for h in held:
                    yield h
                held = []
        if not held:
            return
        parsed = parse_text_tool_call(text, names)
        if parsed is None:
            for h in held:
                yield h
            return
        merged = reduce(lambda x, y: x + y, [m for h in held for m in h])
        yield [
            StreamingChatMessageContent(
                role=AuthorRole.ASSISTANT,
                choice_index=0,
                items=[self._recovered_call(*parsed)],
                ai_model_id=self.ai_model_id,
                metadata=merged.metadata,
                function_invoke_attempt=function_invoke_attempt,
            )
        ]


def _assistant_message(message: ChatMessageContent, calls: list[FunctionCallContent]) -> Message:
    base = MESSAGE_CONVERTERS[AuthorRole.ASSISTANT](message)
    base["tool_calls"] = [
        {
            "function": {
                "name": call.name or call.function_name,
                "arguments": call.arguments if isinstance(call.arguments, Mapping) else _json_object(call.arguments),
            }
        }
        for call in calls
    ]
    return base


def _json_object(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _ordered_tool_messages(calls: list[FunctionCallContent], results: list[FunctionResultContent]) -> list[Message]:
    remaining = list(results)
    ordered: list[Message] = []
    for call in calls:
        match = next((r for r in remaining if call.id and r.id == call.id), None)
        if match is None:
            match = next((r for r in remaining if r.name == call.name), None)
        if match is not None:
            remaining.remove(match)
            content = result_text(match.result)
        else:
            content = MISSING_RESULT
        ordered.append(Message(role="tool", content=content, tool_name=call.name or call.function_name))
    ordered.extend(Message(role="tool", content=result_text(r.result), tool_name=r.name) for r in remaining)
    return ordered
