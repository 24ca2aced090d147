"""A request's response format: one key (SK's ``format``) that every settings class carries to its connector."""

import pytest
from semantic_kernel.connectors.ai.ollama.ollama_prompt_execution_settings import OllamaChatPromptExecutionSettings
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings

from chat.local.settings import LocalChatPromptExecutionSettings
from chat.response_format import response_format, with_response_format

SCHEMA = {"type": "object", "properties": {"claims": {"type": "array"}}, "required": ["claims"]}


@pytest.mark.parametrize(
    "settings",
    [PromptExecutionSettings(service_id="s"), OllamaChatPromptExecutionSettings(), LocalChatPromptExecutionSettings()],
    ids=lambda s: type(s).__name__,
)
def test_a_response_format_is_set_on_a_copy_and_reaches_each_connectors_own_settings(
    settings: PromptExecutionSettings,
) -> None:
    shaped = with_response_format(settings, SCHEMA)
    assert response_format(shaped) == SCHEMA and response_format(settings) is None  # the original is untouched
    # SK converts settings for a service by these keys: each connector's class ends up with the schema in `format`.
    ollama = OllamaChatPromptExecutionSettings.from_prompt_execution_settings(shaped)
    assert ollama.format == SCHEMA and ollama.prepare_settings_dict()["format"] == SCHEMA
    assert LocalChatPromptExecutionSettings.from_prompt_execution_settings(shaped).format == SCHEMA


def test_json_mode_without_a_schema_is_no_response_format() -> None:
    assert response_format(OllamaChatPromptExecutionSettings(format="json")) is None
