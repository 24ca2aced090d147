"""Grammar construction and output parsing for the local model's constrained tool calls (no model needed)."""

import json
import re
from typing import Any

import pytest

from chat.local.grammar import (
    GrammarError,
    answer_grammar,
    call_hints,
    call_prefix,
    json_schema_grammar,
    route_grammar,
    tool_calls_grammar,
    validate_arguments,
)
from chat.local.qwen_format import (
    PARKED_NOTE,
    RESULTS_NOTE,
    STATUS_NOTE,
    PromptMessage,
    parse_tool_calls,
    render_prompt,
    routing_prompt,
    strict_tool_calls,
    when_to_use,
)
from chat.mentions import Mentions, enum_words, identifiers
from checks.structured import answer_schema
from kernel_setup import Settings, open_app

TREND: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "sensors-get_sensor_trend",
        "description": "Returns a trend. Use it for 'is it getting worse?'. Needs pump id.",
        "parameters": {
            "type": "object",
            "properties": {
                "pump_id": {"type": "string"},
                "sensor_type": {"type": "string", "enum": ["vibration", "flow"]},
                "days": {"type": "integer"},
            },
            "required": ["pump_id", "sensor_type"],
        },
    },
}
SUMMARY = {
    "type": "function",
    "function": {
        "name": "assets-get_system_summary",
        "description": "Fleet.",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
}
ALARMS = {
    "type": "function",
    "function": {
        "name": "alarms-list_alarms",
        "parameters": {
            "type": "object",
            "properties": {
                "severity": {"type": "string", "enum": ["low", "critical"]},
                "active_only": {"type": "boolean"},
                "min": {"type": "number"},
            },
            "required": [],
        },
    },
}
TOOLS: list[dict[str, Any]] = [TREND, SUMMARY, ALARMS]


def test_the_call_grammar_names_every_tool_and_closes_enums() -> None:
    grammar = tool_calls_grammar(TOOLS)
    assert grammar.startswith('root ::= call ("\\n" call){0,3}\n')
    for tool in TOOLS:
        assert json.dumps(tool["function"]["name"]).replace('"', '\\"') in grammar
    assert '("\\"vibration\\"" | "\\"flow\\"")' in grammar
    assert 'f1-assets-get-system-summary-args ::= "{}"' in grammar


def test_required_keys_come_first_and_optional_ones_may_be_skipped() -> None:
    grammar = tool_calls_grammar([TREND])
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())
    # The object must open with pump_id (required, first); sensor_type is required after it; days is optional.
    assert (
        rules["f0-sensors-get-sensor-trend-args"]
        == '"{" (f0-sensors-get-sensor-trend-kv0 f0-sensors-get-sensor-trend-t2) "}"'
    )
    assert (
        rules["f0-sensors-get-sensor-trend-t2"] == '", " f0-sensors-get-sensor-trend-kv1 f0-sensors-get-sensor-trend-t3'
    )
    assert rules["f0-sensors-get-sensor-trend-t3"] == '(", " f0-sensors-get-sensor-trend-kv2)?'


def test_an_all_optional_object_may_be_empty_or_start_with_any_key() -> None:
    rules = dict(line.split(" ::= ", 1) for line in tool_calls_grammar([ALARMS]).strip().splitlines())
    entry = rules["f0-alarms-list-alarms-args"]
    assert entry.count("|") == 3 and '""' in entry


def test_a_routed_call_grammar_starts_inside_the_chosen_tools_arguments() -> None:
    grammar = tool_calls_grammar(TOOLS, first="sensors-get_sensor_trend", max_calls=2)
    assert (
        grammar.splitlines()[0] == 'root ::= f0-sensors-get-sensor-trend-args "}" "\\n</tool_call>" ("\\n" call){0,1}'
    )
    assert call_prefix("sensors-get_sensor_trend") == '<tool_call>\n{"name": "sensors-get_sensor_trend", "arguments": '
    with pytest.raises(GrammarError):
        tool_calls_grammar(TOOLS, first="nope")


def test_unsupported_schemas_are_refused_not_loosened() -> None:
    nested = {"function": {"name": "x-y", "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}}}
    with pytest.raises(GrammarError, match="unsupported schema"):
        tool_calls_grammar([nested])
    with pytest.raises(GrammarError):
        tool_calls_grammar([])


def test_call_hints_spell_each_call_as_written_with_mentioned_enum_values_and_every_key() -> None:
    asked = "any critical alarms on PUMP-007?"
    hints = call_hints(TOOLS, said=Mentions.of(asked, nouns=enum_words(TOOLS)), words=identifiers(asked))
    close = "}}\n</tool_call>"
    assert call_prefix("assets-get_system_summary") + "{" + close in hints  # a call without arguments
    assert call_prefix("alarms-list_alarms") + '{"severity": "critical"' + close in hints
    assert not any('"severity": "low"' in hint for hint in hints)  # an optional enum: only what was mentioned
    assert call_prefix("alarms-list_alarms") + '{"active_only": false' + close in hints
    assert call_prefix("alarms-list_alarms") + '{"min": ' in hints  # a free value: up to where it starts
    # A required enum keeps all its values; all keys in schema order tell which key follows a value.
    trend = call_prefix("sensors-get_sensor_trend") + "{"
    assert {trend + f'"sensor_type": "{v}"' + close for v in ("vibration", "flow")} <= set(hints)
    # A free string may be one of the operator's identifiers; the keys in order are cut where free values begin.
    assert trend + '"pump_id": "PUMP-007"' + close in hints
    assert trend + '"pump_id": "' in hints and '", "sensor_type": "vibration", "days": ' in hints
    assert close in hints  # what follows the free days, the last key


def test_identifiers_are_record_ids_canonical_then_the_other_hyphenated_words_as_written() -> None:
    text = "Is PUMP-007 at Station-C worse than PUMP-007's twin, or ALM-0001 (drive-end)? x-y-z"
    assert identifiers(text) == ["PUMP-007", "ALM-0001", "Station-C", "drive-end"]
    # However the operator spells a record id, the call hints and follow-ups see its canonical form.
    assert identifiers("Is pump 7 worse than P8 or pump-4, and what about alarm 3?") == [
        "PUMP-007",
        "PUMP-008",
        "PUMP-004",
        "ALM-0003",
    ]


def test_route_and_answer_grammars() -> None:
    assert route_grammar(["a-b", "c-d"]) == 'root ::= "no_tool" | "a-b" | "c-d"\n'
    assert answer_grammar().startswith("root ::= [^{<`[")


async def test_the_grammar_covers_every_real_pumpops_tool(settings: Settings) -> None:
    async with open_app(settings) as app:
        from semantic_kernel.connectors.ai.function_calling_utils import (
            kernel_function_metadata_to_function_call_format,
        )

        tools = [
            kernel_function_metadata_to_function_call_format(m) for m in app.kernel.get_full_list_of_function_metadata()
        ]
    grammar = tool_calls_grammar(tools)
    assert len(tools) >= 10
    for tool in tools:
        assert tool["function"]["name"] in grammar.replace("\\", "")


def test_parsing_keeps_valid_calls_in_order_and_drops_bad_or_duplicate_ones() -> None:
    text = (
        '<tool_call>\n{"name": "sensors-get_sensor_trend", "arguments": '
        '{"pump_id": "PUMP-007", "sensor_type": "flow"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "assets-get_system_summary", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "assets-get_system_summary", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "made-up", "arguments": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "sensors-get_sensor_trend", "arguments": '
        '{"pump_id": "PUMP-007", "sensor_type": "vibes"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "alarms-list_alarms", "arguments": {"severity": "low"'
    )
    calls = parse_tool_calls(text, TOOLS)
    assert [(c.name, c.arguments) for c in calls] == [
        ("sensors-get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "flow"}),
        ("assets-get_system_summary", {}),
    ]


def test_argument_validation_names_the_problem() -> None:
    params = TREND["function"]["parameters"]
    assert validate_arguments({"pump_id": "P", "sensor_type": "flow", "days": 3}, params) is None
    assert "missing required" in (validate_arguments({"pump_id": "P"}, params) or "")
    assert "not one of" in (validate_arguments({"pump_id": "P", "sensor_type": "x"}, params) or "")
    assert "type integer" in (validate_arguments({"pump_id": "P", "sensor_type": "flow", "days": "3"}, params) or "")
    assert "unknown argument" in (validate_arguments({"pump_id": "P", "sensor_type": "flow", "x": 1}, params) or "")
    assert validate_arguments(["x"], params) == "arguments must be a JSON object"


def test_the_prompt_lists_tools_before_the_per_turn_system_text_and_merges_tool_results() -> None:
    messages = [
        PromptMessage("system", "You are PumpOps. marker 123"),
        PromptMessage("user", "Trend of 7?"),
        PromptMessage("assistant", "", [("sensors-get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "flow"})]),
        PromptMessage("tool", '{"slope": 1}'),
        PromptMessage("tool", '{"slope": 2}'),
    ]
    prompt = render_prompt(messages, [TREND])
    assert prompt.startswith("<|im_start|>system\n# Tools")
    assert prompt.index("<tools>") < prompt.index("marker 123")
    assert '<tool_call>\n{"name": "sensors-get_sensor_trend", "arguments": {"pump_id": "PUMP-007"' in prompt
    assert (
        '<|im_start|>user\n<tool_response>\n{"slope": 1}\n</tool_response>\n'
        '<tool_response>\n{"slope": 2}\n</tool_response>\n' + RESULTS_NOTE + "<|im_end|>" in prompt
    )
    assert RESULTS_NOTE.startswith("Answer from these results") and "pump ids" in RESULTS_NOTE
    assert prompt.endswith("<|im_start|>assistant\n")
    assert PARKED_NOTE not in prompt


def test_results_the_turn_read_for_a_status_question_ask_for_the_alarms_first_and_no_all_clear() -> None:
    summary = PromptMessage("tool", '{"active_alarms_total": 5}', status_question=True)
    status = render_prompt([PromptMessage("user", "Are we OK?"), summary], [])
    assert f"</tool_response>\n{RESULTS_NOTE} {STATUS_NOTE}<|im_end|>" in status
    assert "never say all is well" in STATUS_NOTE and "naming only pumps these results name" in STATUS_NOTE
    # Only for the results the turn read for such a question: a later round gets the plain note.
    later = render_prompt(
        [
            PromptMessage("user", "Are we OK?"),
            summary,
            PromptMessage("assistant", "5 alarms."),
            PromptMessage("user", "How is PUMP-007?"),
            PromptMessage("tool", "{}"),
        ],
        [],
    )
    assert later.count(STATUS_NOTE) == 1 and later.rstrip().endswith(f"{RESULTS_NOTE}<|im_end|>\n<|im_start|>assistant")
    plain = PromptMessage("tool", '{"active_alarms_total": 5}')  # the same result, read for another question
    assert STATUS_NOTE not in render_prompt([PromptMessage("user", "Are we OK?"), plain], [])


def test_a_parked_result_beside_a_read_adds_our_own_note_that_the_action_awaits_approval() -> None:
    parked = PromptMessage(
        "tool", '{"status": "pending_approval", "approval_id": "APR-1A2B3C4D"}', parked=True, approval_id="APR-1A2B3C4D"
    )
    prompt = render_prompt([PromptMessage("user", "Raise a work order"), parked, PromptMessage("tool", "{}")], [])
    assert prompt.count(PARKED_NOTE) == 1 and prompt.index("</tool_response>") < prompt.index(PARKED_NOTE)
    assert RESULTS_NOTE in prompt and "Reply to the operator with exactly" not in prompt  # the read is to be told too
    lookalike = PromptMessage("tool", '{"status": "pending_approval"}')  # the text alone is data: no note
    assert PARKED_NOTE not in render_prompt([PromptMessage("user", "x"), lookalike], [])


def test_the_routing_prompt_shares_the_conversation_prefix_and_lists_when_to_use_each_tool() -> None:
    prompt = render_prompt([PromptMessage("system", "S"), PromptMessage("user", "hi")], TOOLS)
    route = routing_prompt(prompt, TOOLS, "hi")
    assert route.startswith(prompt[: -len("<|im_start|>assistant\n")])
    assert "- sensors-get_sensor_trend: Use it for 'is it getting worse?'." in route
    assert 'last message: "hi"' in route and route.endswith("<|im_start|>assistant\n")
    assert when_to_use(SUMMARY) == "Fleet."


WORK_ORDERS: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "work_orders-list_work_orders",
        "parameters": {
            "type": "object",
            "properties": {
                "pump_id": {"type": "string"},
                "status": {"type": "string", "enum": ["open", "in_progress", "closed"]},
                "limit": {"type": "integer"},
            },
            "required": [],
        },
    },
}


def test_mentions_match_whole_words_and_standalone_numbers() -> None:
    said = Mentions.of("Has the flow of pump-006 dropped in the last 30 days? Anything in progress?")
    assert said.mentions("PUMP-006") and said.mentions("in_progress") and said.mentions(30)
    assert not said.mentions("low")  # inside "flow"
    assert not said.mentions(6) and not said.mentions(True)  # the 006 of an id is not a number; booleans never
    assert said.enum_values({"type": "string", "enum": ["open", "in_progress"]}) == ["in_progress"]
    assert said.enum_values({"type": "string"}) is None


def test_spans_of_time_in_words_mention_their_days() -> None:
    said = Mentions.of("Has PUMP-004's vibration risen over the past week, or the last two months? And 3 weeks?")
    assert said.mentions(7) and said.mentions(60) and said.mentions(21)
    assert not said.mentions(30) and not said.mentions(4)  # no month alone; the 004 of an id is no number
    assert Mentions.of("Any trend this month?").mentions(30) and Mentions.of("over 90 days").mentions(90)
    assert not Mentions.of("Is it weekly maintenance?").mentions(7)  # a word that only starts like a unit
    assert not Mentions.of("How is the system doing today?").numbers


def test_a_word_before_another_enum_value_qualifies_it_and_mentions_nothing() -> None:
    nouns = enum_words([ALARMS, TREND, WORK_ORDERS])
    assert {"low", "critical", "flow", "vibration", "open"} <= nouns
    trip = Mentions.of("Why is PUMP-006 offline, and what about its low flow?", nouns=nouns)
    assert not trip.mentions("low") and trip.mentions("flow")
    assert not Mentions.of("Alarms for high vibration?", nouns=nouns).mentions("high")
    assert Mentions.of("Any high alarms? And low ones?", nouns=nouns).mentions("low")
    assert Mentions.of("Low flow on PUMP-006, and the low alarms?", nouns=nouns).mentions("low")  # the second one
    assert Mentions.of("Show the low flow alarms").mentions("low")  # without nouns, every whole word counts
    grammar = tool_calls_grammar([ALARMS], said=trip)
    assert "severity" not in grammar and "active_only" in grammar  # no severity mentioned: none can be written


def test_grounding_drops_only_optional_values_nobody_mentioned() -> None:
    said = Mentions.of("Are there any open work orders?")
    parameters = {**WORK_ORDERS["function"]["parameters"], "required": ["limit"]}
    arguments = {"pump_id": "PUMP-007", "status": "open", "limit": 5}
    assert said.grounded(arguments, parameters) == {"status": "open", "limit": 5}  # required: kept as written
    assert said.grounded({"active_only": True}, {"properties": {"active_only": {"type": "boolean"}}}) == {
        "active_only": True
    }


def test_with_mentions_an_optional_enum_offers_only_mentioned_values_or_disappears() -> None:
    def rules(text: str, tool: dict[str, Any]) -> dict[str, str]:
        grammar = tool_calls_grammar([tool], said=Mentions.of(text))
        return dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())

    opened = rules("Any open work orders?", WORK_ORDERS)
    assert opened["f0-work-orders-list-work-orders-kv1"] == '"\\"status\\": " ("\\"open\\"")'
    nothing = rules("Any work orders?", WORK_ORDERS)
    assert "status" not in "".join(nothing.values())  # no status mentioned: the key cannot be written
    assert "pump_id" in "".join(nothing.values())  # free strings are checked after decoding, not forced
    # A required enum is never narrowed: the call must still name a sensor.
    required = rules("Is it getting worse?", TREND)
    assert '("\\"vibration\\"" | "\\"flow\\"")' in required["f0-sensors-get-sensor-trend-kv1"]


def test_parsing_with_mentions_leaves_out_filters_nobody_asked_for() -> None:
    text = (
        '<tool_call>\n{"name": "work_orders-list_work_orders", "arguments": '
        '{"pump_id": "PUMP-007", "status": "open"}}\n</tool_call>'
    )
    assert [c.arguments for c in parse_tool_calls(text, [WORK_ORDERS])] == [{"pump_id": "PUMP-007", "status": "open"}]
    said = Mentions.of("Are there any open work orders?")
    assert [c.arguments for c in parse_tool_calls(text, [WORK_ORDERS], said)] == [{"status": "open"}]
    said = Mentions.of("Open work orders for PUMP-007?")
    assert [c.arguments for c in parse_tool_calls(text, [WORK_ORDERS], said)] == [
        {"pump_id": "PUMP-007", "status": "open"}
    ]


def test_strict_parsing_accepts_what_the_call_grammar_would_have_allowed_less_unmentioned_values() -> None:
    said = Mentions.of("Any open work orders for PUMP-007?")
    block = '<tool_call>\n{{"name": "work_orders-list_work_orders", "arguments": {}}}\n</tool_call>'
    good = block.format('{"pump_id": "PUMP-007", "status": "open"}')
    assert [c.arguments for c in strict_tool_calls(good, [WORK_ORDERS], said, max_calls=2)] == [
        {"pump_id": "PUMP-007", "status": "open"}
    ]
    two = good + "\n" + block.format("{}")
    assert len(strict_tool_calls(two, [WORK_ORDERS], said, max_calls=2)) == 2
    rejected = [
        good + "\nSo there is one.",  # text after the call
        two + "\n" + block.format('{"status": "open"}'),  # more calls than allowed
        good + "\n" + good,  # the same call twice
        block.format('{"pump": "PUMP-007"}'),  # an unknown key with a value the operator gave
        block.format('{"limit": "PUMP-007"}'),  # a mentioned value of the wrong type
        good[:-5],  # not closed
    ]
    for text in rejected:
        assert strict_tool_calls(text, [WORK_ORDERS], said, max_calls=2) == [], text
    # Optional values nobody mentioned are left out before the schema is checked, whatever they were:
    # another pump, an enum value, an empty or mistyped filter, an unknown key.
    rejected_too = block.format('{"status": "closed"}')  # "open" was mentioned: the grammar would have written it
    assert strict_tool_calls(rejected_too, [WORK_ORDERS], said, max_calls=2) == []
    said = Mentions.of("Any work orders for PUMP-007?")  # no status mentioned: the grammar allows none
    for arguments in ['{"pump_id": "PUMP-004"}', '{"status": "closed"}', '{"limit": ""}', '{"pump": "7"}']:
        other = block.format(arguments)
        assert [c.arguments for c in strict_tool_calls(other, [WORK_ORDERS], said, max_calls=2)] == [{}], other
    mistyped = block.format('{"status": "open", "limit": "ten"}')  # "ten" never said: left out, the rest kept
    said = Mentions.of("Any open work orders?")
    assert [c.arguments for c in strict_tool_calls(mistyped, [WORK_ORDERS], said, max_calls=2)] == [{"status": "open"}]


def test_the_local_tool_list_is_brief_but_keeps_what_a_call_needs() -> None:
    described = {
        "type": "function",
        "function": {
            "name": "alarms-list_alarms",
            "description": "Returns alarms (id, severity), most severe first. Use it for alarms (of any pump).",
            "parameters": {
                "type": "object",
                "properties": {
                    "pump_id": {"type": "string", "description": "Only this pump, e.g. 'PUMP-007'."},
                    "severity": {"type": "string", "enum": ["low", "critical"], "description": "e.g. 'low'."},
                },
                "required": ["pump_id"],
            },
        },
    }
    original = json.dumps(described)
    prompt = render_prompt([PromptMessage("user", "hi")], [described, SUMMARY])
    listed = json.loads(prompt.split("<tools>\n")[1].split("\n")[0])["function"]
    # The opening sentence's aside goes; the sentence and the rest of the description, brackets included, stay.
    assert listed["description"] == "Returns alarms, most severe first. Use it for alarms (of any pump)."
    assert listed["parameters"]["properties"] == {
        "pump_id": {"type": "string", "description": "Only this pump, e.g. 'PUMP-007'."},  # required: described
        "severity": {"type": "string", "enum": ["low", "critical"]},  # optional: name, type and enum only
    }
    assert listed["parameters"]["required"] == ["pump_id"]
    assert json.dumps(described) == original  # the tool's own schema is untouched
    assert '"description":"Fleet."' in prompt  # no "Returns ..." sentence: as it is


# -- the response format's grammar ---------------------------------------------------------------------------------

_GBNF_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|\{\d*,?\d*\}|[a-z0-9-]+|[()|?*+]|\s+')


def gbnf_regex(grammar: str) -> re.Pattern[str]:
    """A regular expression accepting what ``grammar`` accepts (a GBNF without recursion, as ours are)."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().split("\n"))

    def expand(body: str, depth: int = 0) -> str:
        assert depth < 20, "recursive grammar"
        out = []
        for token in (m.group(0) for m in _GBNF_TOKEN.finditer(body)):
            if token.isspace():
                continue
            if token.startswith('"'):
                out.append(re.escape(json.loads(token)))
            elif token.startswith("[") or token[0] in "(){|?*+":
                out.append(token if token != "(" else "(?:")
            else:
                out.append("(?:" + expand(rules[token], depth + 1) + ")")
        return "".join(out)

    assert "".join(m.group(0) for m in _GBNF_TOKEN.finditer(rules["root"])) == rules["root"]  # all tokens read
    return re.compile(expand(rules["root"]), re.DOTALL)


ANSWER_SCHEMA = answer_schema(["E1", "E2", "E10"])


def answer(claims: list[str], note: str = "") -> str:
    return json.dumps({"claims": [{"record": c} for c in claims], "note": note}, ensure_ascii=False)


def test_the_response_format_grammar_accepts_answers_citing_the_records_as_json_dumps_writes_them() -> None:
    accepts = gbnf_regex(json_schema_grammar(ANSWER_SCHEMA)).fullmatch
    assert accepts(answer(["E10", "E1"], 'No, stop it: "zone" D is severe.\nCall the crew.'))
    assert accepts(answer([])) and accepts(answer(["E2"] * 6, "x" * 120))
    assert accepts(answer(["E1"], "Très bien — arrêtez-la."))  # any letter but a digit


@pytest.mark.parametrize(
    "text",
    [
        answer(["E3"]),  # no record of this turn
        answer(["E1"], "PUMP-007 is at 9.4 mm/s"),  # digits belong to the records
        answer(["E1"], "\\u0039 is a nine in disguise"),  # nor spelled as an escape
        answer(["E1"] * 7),  # at most six claims
        answer(["E1"], "x" * 121),  # a short note
        '{"note": "", "claims": []}',  # the schema's order
        '{"claims": [{"record": "E1", "why": "x"}], "note": ""}',  # no other keys
        '{"claims":[{"record":"E1"}],"note":""}',  # json.dumps's spacing, as in the call grammars
    ],
)
def test_the_response_format_grammar_refuses_what_the_schema_does_not_allow(text: str) -> None:
    assert gbnf_regex(json_schema_grammar(ANSWER_SCHEMA)).fullmatch(text) is None


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "string", "pattern": "^[a-z]+$"}, "not one negated character class"),
        ({"type": "string", "format": "date"}, "unsupported keys"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": {}}, "unsupported keys"),
        ({"type": "array", "items": {"type": "null"}}, "unsupported schema"),
        ({"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 2}, "minItems at most maxItems"),
    ],
)
def test_response_format_schemas_outside_the_subset_are_refused_not_loosened(
    schema: dict[str, Any], problem: str
) -> None:
    with pytest.raises(GrammarError, match=problem):
        json_schema_grammar(schema)


def test_the_call_grammars_read_as_regular_expressions_too() -> None:
    # The matcher above, checked on a grammar whose language the call tests already pin.
    accepts = gbnf_regex(tool_calls_grammar([SUMMARY], max_calls=1)).fullmatch
    assert accepts('<tool_call>\n{"name": "assets-get_system_summary", "arguments": {}}\n</tool_call>')
    assert not accepts('<tool_call>\n{"name": "assets-get_system_summary", "arguments": {"x": 1}}\n</tool_call>')
