"""Canaries: fail loudly if an SK upgrade moves the private methods HardenedOllamaChatCompletion overrides."""

import inspect

import semantic_kernel
from semantic_kernel.connectors.ai.ollama.services import ollama_chat_completion, utils
from semantic_kernel.connectors.ai.ollama.services.ollama_chat_completion import OllamaChatCompletion
from semantic_kernel.contents import AuthorRole

from chat.ollama.service import HardenedOllamaChatCompletion, parse_text_tool_call

EXPECTED = {
    "_parse_tool_calls": ["self", "tool_calls", "items"],
    "_prepare_chat_history_for_request": ["self", "chat_history", "role_key", "content_key"],
    "_inner_get_chat_message_contents": ["self", "chat_history", "settings"],
    "_inner_get_streaming_chat_message_contents": ["self", "chat_history", "settings", "function_invoke_attempt"],
}


def test_semantic_kernel_is_the_pinned_version() -> None:
    assert semantic_kernel.__version__ == "1.45.0"


def test_overridden_private_methods_exist_with_the_expected_parameters() -> None:
    for name, params in EXPECTED.items():
        base = getattr(OllamaChatCompletion, name)
        assert list(inspect.signature(base).parameters) == params, name
        assert getattr(HardenedOllamaChatCompletion, name) is not base, name


def test_both_response_paths_still_parse_tool_calls_through_the_overridden_hook() -> None:
    source = inspect.getsource(ollama_chat_completion)
    assert source.count("self._parse_tool_calls(") >= 2


def test_the_message_converter_table_we_read_still_covers_every_role() -> None:
    assert {AuthorRole.SYSTEM, AuthorRole.USER, AuthorRole.ASSISTANT, AuthorRole.TOOL} <= set(utils.MESSAGE_CONVERTERS)


def test_text_calls_are_recovered_only_when_the_whole_message_is_one_listed_call() -> None:
    names = {"assets-get_pump_details"}
    good = '{"name": "assets-get_pump_details", "arguments": {"pump_id": "PUMP-007"}}'
    assert parse_text_tool_call(good, names) == ("assets-get_pump_details", {"pump_id": "PUMP-007"})
    for bad in [
        "Sure: " + good,
        "```json\n" + good + "\n```",
        '{"name": "assets-drop_everything", "arguments": {}}',
        '{"name": "assets-get_pump_details", "arguments": {}, "extra": 1}',
        '{"name": "assets-get_pump_details", "arguments": "PUMP-007"}',
        '[{"name": "assets-get_pump_details", "arguments": {}}]',
        "",
    ]:
        assert parse_text_tool_call(bad, names) is None, bad
