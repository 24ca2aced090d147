"""The messages a turn builds and reads: tool calls and results as SK contents, history as sent again.

Also the one-line summary of each call's result for people, read from the result's evidence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from semantic_kernel.contents import AuthorRole, ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.function_result_content import FunctionResultContent

from checks.evidence import ToolResult
from governance import APPROVAL_ID
from kernel_setup.arguments import as_object
from kernel_setup.filters.audit import STATUS_KEY
from kernel_setup.filters.outcome import CallOutcome
from kernel_setup.shaping import NOTE_KEY, fence

__all__ = [
    "approval_id_of",
    "arguments_of",
    "call_summary",
    "is_json_object",
    "items_text",
    "read_texts",
    "refenced",
    "tool_message",
]


def tool_message(
    call: FunctionCallContent, text: str, status: str | None = None, note: str | None = None
) -> ChatMessageContent:
    """A tool result message; ``status`` (its outcome) and ``note`` (`NOTE_KEY`) travel as metadata a service reads."""
    return ChatMessageContent(
        role=AuthorRole.TOOL,
        items=[
            FunctionResultContent(
                id=call.id,
                name=call.name,
                function_name=call.function_name,
                plugin_name=call.plugin_name,
                result=text,
                metadata={key: value for key, value in ((STATUS_KEY, status), (NOTE_KEY, note)) if value},
            )
        ],
    )


def arguments_of(call: FunctionCallContent) -> dict[str, Any]:
    """A call's arguments as a dict; empty when they are neither a mapping nor a JSON object."""
    return as_object(call.arguments)


def is_json_object(raw: str) -> bool:
    """Whether ``raw`` is the JSON text of an object."""
    try:
        return isinstance(json.loads(raw), dict)
    except ValueError:
        return False


def read_texts(chat: ChatHistory) -> list[str]:
    """What the operator said and the tools returned in ``chat`` (not the assistant's own words, nor the system)."""
    texts: list[str] = []
    for message in chat.messages:
        if message.role == AuthorRole.USER:
            texts.append(message.content or "")
        elif message.role == AuthorRole.TOOL:
            texts.append(items_text(message))
    return texts


def items_text(message: ChatMessageContent) -> str:
    """The text of a message's tool calls and results."""
    parts = []
    for item in message.items:
        if isinstance(item, FunctionCallContent):
            parts.append(f"{item.name}{item.arguments}")
        elif isinstance(item, FunctionResultContent):
            parts.append(str(item.result))
    return "".join(parts)


def refenced(messages: Sequence[ChatMessageContent], marker: str) -> list[ChatMessageContent]:
    """Stored history as sent again: earlier fences are neutralised and the results fenced anew."""
    out: list[ChatMessageContent] = []
    for message in messages:
        if message.role != AuthorRole.TOOL:
            out.append(message)
            continue
        items = [
            FunctionResultContent(
                id=i.id,
                name=i.name,
                function_name=i.function_name,
                plugin_name=i.plugin_name,
                result=fence(str(i.result), marker),
            )
            if isinstance(i, FunctionResultContent)
            else i
            for i in message.items
        ]
        out.append(ChatMessageContent(role=AuthorRole.TOOL, items=items))
    return out


def call_summary(outcome: CallOutcome, result: ToolResult) -> str:
    """A line about a call's result for people: its error, its approval, or a few naming fields."""
    text, data = result.text, result.data
    if outcome.status in {"error", "rejected"}:
        return (outcome.error or text)[:160]
    if not isinstance(data, dict):
        return text[:120]
    if outcome.status == "pending_approval":
        return f"pending approval {data.get('approval_id', '')}".strip()
    parts = []
    for key in ("pump_id", "count", "status", "total_pumps", "projection"):
        if key in data and not isinstance(data[key], dict | list):
            parts.append(f"{key}={data[key]}")
    return ", ".join(parts) or f"{len(text)} characters"


def approval_id_of(result: ToolResult) -> str | None:
    """The approval id of a parked result's gate payload, when it has the ids' form."""
    found = result.data.get("approval_id") if isinstance(result.data, dict) else None
    return found if isinstance(found, str) and APPROVAL_ID.fullmatch(found) else None
