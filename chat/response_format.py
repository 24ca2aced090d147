"""A request's response format: the JSON schema its answer must match, carried in SK's own ``format`` key.

The turn sets it per request (`with_response_format`); each connector translates it: SK's Ollama settings have a
``format`` field that the server enforces (SK 1.45 takes ``"json"`` or a schema dict, and the ollama client passes
the schema on), the local model's settings (`chat.local.settings`) have the same field and decode the answer under
a grammar built from the schema (`chat.local.grammar.json_schema_grammar`). A settings class without the field (the
``auto`` provider's plain `PromptExecutionSettings`) carries it in ``extension_data``, which SK unpacks into the
field of the same name when it converts settings for a service, and which `chat.provider.AutoChatCompletion`
hands to the provider it chose.

A request with a response format asks for an answer, not for calls: send it without tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings

__all__ = ["FORMAT_KEY", "response_format", "with_response_format"]

FORMAT_KEY = "format"


def with_response_format(settings: PromptExecutionSettings, schema: Mapping[str, Any]) -> PromptExecutionSettings:
    """A copy of ``settings`` whose answer must be JSON matching ``schema``."""
    copy = settings.model_copy(deep=True)
    if FORMAT_KEY in copy.keys:
        setattr(copy, FORMAT_KEY, dict(schema))
    else:
        copy.extension_data = {**copy.extension_data, FORMAT_KEY: dict(schema)}
    return copy


def response_format(settings: PromptExecutionSettings) -> dict[str, Any] | None:
    """The JSON schema ``settings`` ask the answer to match, or None (free text, or only ``"json"``)."""
    value = getattr(settings, FORMAT_KEY, None) if FORMAT_KEY in settings.keys else None
    if value is None:
        value = settings.extension_data.get(FORMAT_KEY)
    return dict(value) if isinstance(value, Mapping) else None
