"""SK's chat history in the local model's terms: messages for the prompt, compact results, what was said."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from semantic_kernel.contents import AuthorRole
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.function_result_content import FunctionResultContent

from chat.local.compact import compact_json
from chat.local.qwen_format import PromptMessage
from kernel_setup.arguments import as_object
from kernel_setup.filters.audit import STATUS_KEY
from kernel_setup.shaping import NOTE_KEY, STATUS_QUESTION, fence, parked_approval_id, remark, result_text, unfence

__all__ = ["compact_result", "conversation_text", "last_user_text", "to_prompt_messages"]


def to_prompt_messages(chat_history: ChatHistory, marker: str) -> list[PromptMessage]:
    """SK's chat history in the model's terms: calls with their full names, results as compact text.

    Fences, in the system prompt and around results, carry ``marker`` whatever turn drew them.
    """
    out: list[PromptMessage] = []
    for message in chat_history.messages:
        if message.role == AuthorRole.TOOL:
            for item in message.items:
                if isinstance(item, FunctionResultContent):
                    metadata = item.metadata or {}  # set by the runner
                    parked = metadata.get(STATUS_KEY) == "pending_approval"
                    raw = result_text(item.result)
                    text = compact_result(raw, marker)
                    approval = parked_approval_id(raw) if parked else ""
                    status_question = metadata.get(NOTE_KEY) == STATUS_QUESTION
                    out.append(
                        PromptMessage(
                            role="tool",
                            content=text,
                            parked=parked,
                            approval_id=approval,
                            status_question=status_question,
                        )
                    )
            continue
        if message.role == AuthorRole.ASSISTANT:
            calls: list[tuple[str, Mapping[str, Any]]] = [
                (item.name or item.function_name, as_object(item.arguments))
                for item in message.items
                if isinstance(item, FunctionCallContent)
            ]
            out.append(PromptMessage(role="assistant", content=message.content or "", tool_calls=calls))
            continue
        if message.role in (AuthorRole.SYSTEM, AuthorRole.DEVELOPER):
            out.append(PromptMessage(role="system", content=remark(message.content or "", marker)))
        else:
            out.append(PromptMessage(role="user", content=message.content or ""))
    return out


def compact_result(text: str, marker: str) -> str:
    """A tool result as the local model reads it: JSON as compact text (`compact_json`), fenced again.

    The data is decoded before it is re-rendered, so it is fenced anew under ``marker`` (which
    neutralises any fence words the decoding revealed, and removes ``marker`` from the data).
    """
    fenced = unfence(text)
    if fenced is None:
        return compact_json(text)
    return fence(compact_json(fenced[1]), marker)


def conversation_text(chat_history: ChatHistory) -> str:
    """What the operator and the assistant said (not the system prompt, not tool results): what arguments may cite."""
    spoken = (AuthorRole.USER, AuthorRole.ASSISTANT)
    return "\n".join(m.content or "" for m in chat_history.messages if m.role in spoken and m.content)


def last_user_text(chat_history: ChatHistory) -> str:
    """What the operator said last."""
    return next((m.content or "" for m in reversed(chat_history.messages) if m.role == AuthorRole.USER), "")
