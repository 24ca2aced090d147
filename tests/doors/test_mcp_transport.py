"""Reading MCP messages off the wire: nesting bounded before parsing, every failure a JSON-RPC error."""

from __future__ import annotations

import json

import pytest
from mcp import types

from doors.mcp_transport import MAX_NESTING, UnreadableMessageError, bound_nesting, read_json, read_message


def nesting(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)
    return 0


def test_containers_opening_past_the_limit_become_null_and_brackets_in_strings_do_not_count() -> None:
    text = '{"a": [[[[1]]]], "b": "[[[[{{{{", "c": {"d": []}}'
    assert json.loads(bound_nesting(text, limit=3)) == {"a": [[None]], "b": "[[[[{{{{", "c": {"d": []}}


def test_text_that_cannot_nest_past_the_limit_comes_back_as_it_is() -> None:
    text = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    assert bound_nesting(text) is text
    deep_but_within = "[" * MAX_NESTING + "]" * MAX_NESTING
    assert bound_nesting(deep_but_within) is deep_but_within


def test_a_message_nested_50000_deep_parses_to_one_level_past_the_limit() -> None:
    value = read_json('{"a": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert nesting(value) == MAX_NESTING + 1


@pytest.mark.parametrize(
    ("text", "code", "request_id"),
    [
        ("this line is not JSON", types.PARSE_ERROR, None),
        ("[" * 50_000, types.PARSE_ERROR, None),
        ("1" * 5_000, types.PARSE_ERROR, None),  # past Python's 4300-digit limit for integers
        ('{"jsonrpc": "2.0", "id": 7, "method": 5}', types.INVALID_REQUEST, 7),
        ('{"id": "abc"}', types.INVALID_REQUEST, "abc"),
    ],
)
def test_unreadable_messages_are_answered_with_a_json_rpc_error(text: str, code: int, request_id: object) -> None:
    with pytest.raises(UnreadableMessageError) as caught:
        read_message(text)
    response = json.loads(caught.value.response_text())
    assert response["jsonrpc"] == "2.0" and response["id"] == request_id and response["error"]["code"] == code
    assert response["error"]["message"].split(":")[0] in {"Parse error", "Invalid request"}
