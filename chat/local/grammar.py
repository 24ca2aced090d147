"""llama.cpp GBNF grammars for constrained tool calls, built from the tool schemas the model is shown.

Pure and dependency-free, so the exact grammar is testable without llama.cpp. Only the JSON-schema
subset our kernel functions produce is supported (an object of string, string-enum, integer,
number and boolean properties, some required); anything else is refused with `GrammarError`
rather than silently loosened.

Shapes (whitespace fixed to what Qwen2.5 writes, so constrained output stays in distribution):

- `route_grammar`: ``no_tool`` or one advertised tool name, the cheap routing step;
- `tool_calls_grammar`: one to ``max_calls`` ``<tool_call>`` blocks separated by newlines, each
  ``{"name": "<tool>", "arguments": {...}}`` where the name is one of the advertised tools and the
  arguments follow that tool's schema: required keys present, optional keys in schema order, enums
  closed, types exact; with ``first``, the routed tool's call is already open in the prompt; with
  ``said`` (`Mentions` of the conversation), an optional enum argument can only take a value the
  conversation mentions and cannot be written when it mentions none (a small model otherwise fills
  filters nobody asked for); other optional values are checked after decoding
  (`Mentions.grounded`), since forcing a free string to a mentioned word distorts it;
- `answer_grammar`: free text that does not open like a call printed as text;
- `json_schema_grammar`: an answer in the JSON shape a request's response format gives (`chat.response_format`),
  in the same fixed whitespace: objects, arrays with ``maxItems``, enums, and strings with ``maxLength`` and a
  ``pattern`` of one negated character class (``^[^0-9]*$``: no digits, and no unicode escapes that could
  spell one).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chat.mentions import Mentions, tool_function
from core.errors import PumpOpsError

__all__ = [
    "NAME_OPENING",
    "GrammarError",
    "answer_grammar",
    "call_hints",
    "call_prefix",
    "json_schema_grammar",
    "route_grammar",
    "tool_calls_grammar",
    "tool_name_grammar",
    "validate_arguments",
]

ROUTE_NO_TOOL = "no_tool"

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
NAME_OPENING = TOOL_CALL_OPEN + '\n{"name": "'  # a call as the model writes it, up to the tool name
_PRIMITIVES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
}

# Shared terminals. Strings exclude control characters; escapes are JSON's.
_BASE_RULES = {
    "string": r'"\"" char* "\""',
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
    "integer": r'"-"? ("0" | [1-9] [0-9]{0,15})',
    "number": r'"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,10})?',
    "boolean": r'"true" | "false"',
}


class GrammarError(PumpOpsError):
    """A tool schema uses a JSON-schema feature the grammar builder does not support."""


def _literal(text: str) -> str:
    """A GBNF string literal matching ``text`` exactly."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def _rule_name(text: str) -> str:
    """A GBNF rule name (letters, digits, dashes) derived from ``text``."""
    return re.sub(r"[^a-zA-Z0-9-]+", "-", text).strip("-").lower() or "x"


def _value_rule(schema: Mapping[str, Any], where: str) -> str:
    """The GBNF expression for one property's value."""
    enum = schema.get("enum")
    if enum is not None:
        if not enum or not all(isinstance(v, str | int | float | bool) and v is not None for v in enum):
            raise GrammarError(f"{where}: enum must be a non-empty list of scalars.")
        return "(" + " | ".join(_literal(json.dumps(v, ensure_ascii=False)) for v in enum) + ")"
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _PRIMITIVES:
        return _PRIMITIVES[kind]
    raise GrammarError(
        f"{where}: unsupported schema {dict(schema)!r}; supported: string, enum, integer, number, boolean."
    )


def _object_rules(
    prefix: str,
    parameters: Mapping[str, Any],
    where: str,
    said: Mentions | None = None,
    value_rule: Callable[[Mapping[str, Any], str], str] = _value_rule,
) -> dict[str, str]:
    """Rules for an arguments object; the entry rule is ``<prefix>-args``; ``value_rule`` writes each value's."""
    if parameters.get("type", "object") != "object":
        raise GrammarError(f"{where}: parameters must be an object schema.")
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    unknown = required - set(properties)
    if unknown:
        raise GrammarError(f"{where}: required keys {sorted(unknown)} are not among the properties.")
    names: list[str] = []
    rules: dict[str, str] = {}
    kv: list[str] = []
    for name in properties:
        value = value_rule(properties[name], f"{where}.{name}")  # validates even a property left out below
        allowed = _enum_offered(properties[name], said, name in required)
        if allowed is not None:
            if not allowed:
                continue  # an optional argument nothing in the conversation mentions is not written
            value = "(" + " | ".join(_literal(json.dumps(v, ensure_ascii=False)) for v in allowed) + ")"
        rule = f"{prefix}-kv{len(names)}"
        rules[rule] = f"{_literal(json.dumps(name) + ': ')} {value}"
        kv.append(rule)
        names.append(name)
    entry = f"{prefix}-args"
    if not names:
        rules[entry] = '"{}"'
        return rules
    # tail_i: the properties after position i, each preceded by ", " (optional ones may be skipped).
    for index in range(len(names), 0, -1):
        rest = f" {prefix}-t{index + 1}" if index < len(names) else ""
        item = f'", " {kv[index - 1]}'
        body = f"{item}{rest}" if names[index - 1] in required else f"({item})?{rest}"
        rules[f"{prefix}-t{index}"] = body
    # The first property written may be any property preceded only by optional ones.
    firsts: list[str] = []
    for index, name in enumerate(names):
        tail = f" {prefix}-t{index + 2}" if index + 1 < len(names) else ""
        firsts.append(f"{kv[index]}{tail}")
        if name in required:
            break
    else:
        firsts.append('""')  # every property optional: the empty object is valid
    rules[entry] = '"{" (' + " | ".join(firsts) + ') "}"'
    return rules


def tool_calls_grammar(
    tools: Sequence[Mapping[str, Any]], *, max_calls: int = 4, first: str | None = None, said: Mentions | None = None
) -> str:
    """A grammar for one to ``max_calls`` tool calls of the advertised ``tools`` in Qwen2.5's format.

    Args:
        tools: tool definitions as advertised, ``{"type": "function", "function": {"name", "parameters"}}``.
        max_calls: the most calls one model turn may make (parallel calls).
        first: the tool already chosen by the routing step; the prompt then ends with
            `call_prefix(first)` and the grammar starts inside that call's arguments.
        said: what the conversation mentions; optional enum arguments are then limited to those values.

    Raises:
        GrammarError: no tools, or a schema outside the supported subset.
    """
    if not tools:
        raise GrammarError("No tools to build a call grammar for.")
    if max_calls < 1:
        raise GrammarError("max_calls must be at least 1.")
    rules: dict[str, str] = {}
    alternatives: list[str] = []
    names: dict[str, str] = {}
    for index, tool in enumerate(tools):
        function = tool_function(tool)
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise GrammarError(f"Tool {index} has no name.")
        prefix = f"f{index}-{_rule_name(name)}"
        rules.update(_object_rules(prefix, function.get("parameters") or {}, name, said))
        head = _literal(f'{{"name": {json.dumps(name)}, "arguments": ')
        rules[prefix] = f'{head} {prefix}-args "}}"'
        alternatives.append(prefix)
        names[name] = prefix
    close = _literal(chr(10) + TOOL_CALL_CLOSE)
    rules["call"] = f"{_literal(TOOL_CALL_OPEN + chr(10))} ({' | '.join(alternatives)}) {close}"
    more = f' ("\\n" call){{0,{max_calls - 1}}}' if max_calls > 1 else ""
    if first is None:
        lines = [f"root ::= call{more}"]
    elif first in names:
        lines = [f'root ::= {names[first]}-args "}}" {close}{more}']
    else:
        raise GrammarError(f"Routed tool {first!r} is not among the advertised tools.")
    lines += [f"{name} ::= {body}" for name, body in rules.items()]
    lines += [f"{name} ::= {body}" for name, body in _BASE_RULES.items()]
    return "\n".join(lines) + "\n"


def route_grammar(tool_names: Sequence[str]) -> str:
    """The routing step's grammar: ``no_tool`` or exactly one advertised tool name.

    Not ``answer``: operators write "answer with the id", which pulls a small model to that word.
    """
    if not tool_names:
        raise GrammarError("No tools to route to.")
    options = [ROUTE_NO_TOOL, *tool_names]
    return "root ::= " + " | ".join(_literal(o) for o in options) + "\n"


def tool_name_grammar(tool_names: Sequence[str]) -> str:
    """One advertised tool name and its closing quote, generated after `NAME_OPENING`.

    Used after native routing: the prompt ends with the call's fixed opening (read in one batch),
    the name is chosen greedily in the model's own call format, then the arguments are generated
    from `call_prefix` of that name.
    """
    if not tool_names:
        raise GrammarError("No tools to name.")
    return "root ::= (" + " | ".join(_literal(n) for n in tool_names) + ") " + _literal('"') + "\n"


def call_prefix(name: str) -> str:
    """The text that opens a call of ``name``; the routed call phase's prompt ends with it."""
    return f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name)}, "arguments": '


def call_hints(
    tools: Sequence[Mapping[str, Any]], said: Mentions | None = None, words: Sequence[str] = ()
) -> list[str]:
    """Calls of ``tools`` as Qwen2.5 writes them, for drafting a call written without a grammar (`lookup_decoding`).

    Per tool: the call without arguments; with each property alone, as each value it may take (an enum's, the
    ones ``said`` mentions for an optional one; ``true``/``false``; for a free string each of ``words``, the
    operator's identifiers) or else up to its opening quote; and with all its properties in schema order, cut
    where a free value begins, so the key after a value is known too. Not a grammar: only where these agree is a
    draft taken, and the model's own choice decides every token.
    """
    hints: list[str] = []
    close = "}}\n" + TOOL_CALL_CLOSE
    for tool in tools:
        function = tool_function(tool)
        parameters = function.get("parameters") or {}
        properties: Mapping[str, Any] = parameters.get("properties") or {}
        required = set(parameters.get("required") or [])
        head = call_prefix(str(function.get("name"))) + "{"
        hints.append(head + close)
        segment = head
        for position, (name, schema) in enumerate(properties.items()):
            key = json.dumps(name) + ": "
            fixed = [json.dumps(v, ensure_ascii=False) for v in _hinted_values(schema, said, name in required)]
            text = schema.get("type") == "string" and "enum" not in schema
            free = [json.dumps(word, ensure_ascii=False) for word in words] if text else []
            opening = '"' if schema.get("type") == "string" else ""
            hints += [head + key + value + close for value in fixed + free] or [head + key + opening]
            separator = ", " if position else ""
            if fixed:
                segment += separator + key + fixed[0]
            else:  # a free value: this segment ends where it begins, the next one begins where it ends
                hints.append(segment + separator + key + opening)
                segment = opening
        if len(properties) > 1:
            hints.append(segment + close)
    return hints


def _hinted_values(schema: Mapping[str, Any], said: Mentions | None, required: bool) -> list[Any]:
    offered = _enum_offered(schema, said, required)
    if offered is not None:
        return offered
    return [True, False] if schema.get("type") == "boolean" else []


def _enum_offered(schema: Mapping[str, Any], said: Mentions | None, required: bool) -> list[Any] | None:
    """The values an enum property may be written with; None when ``schema`` is not an enum.

    All of them when the property is required or nothing is known of the conversation, else only the ones ``said``
    mentions (maybe none). The call grammar and the call hints both follow this.
    """
    if said is None or required:
        enum = schema.get("enum")
        return None if enum is None else list(enum)
    return said.enum_values(schema)


def answer_grammar() -> str:
    """Free text that does not open with JSON, markup or a code fence (a call printed as text)."""
    return "root ::= [^{<`[ \\t\\n] [^\\x00]*\n"


_ANNOTATIONS = {"title", "description"}
_SCHEMA_KEYS = {  # what each kind of `json_schema_grammar` node may hold: a key outside it would loosen the grammar
    "enum": {"enum", "type"},
    "object": {"type", "properties", "required", "additionalProperties"},
    "array": {"type", "items", "minItems", "maxItems"},
    "string": {"type", "minLength", "maxLength", "pattern"},
    "integer": {"type"},
    "number": {"type"},
    "boolean": {"type"},
}
_NEGATED_CLASS = re.compile(r"\^\[\^((?:[A-Za-z0-9](?:-[A-Za-z0-9])?)+)\]\*\$")


def json_schema_grammar(schema: Mapping[str, Any]) -> str:
    """A grammar for JSON matching ``schema``, written as ``json.dumps`` writes it (``", "`` and ``": "``).

    Supported: objects (properties in schema order, required and optional; no other keys), arrays (``items``,
    ``minItems``, ``maxItems``), enums of scalars, strings (``maxLength``, ``minLength``, and ``pattern`` only as one
    negated class of letters, digits and ranges, anchored and starred: ``^[^0-9]*$``), integers, numbers, booleans.

    Raises:
        GrammarError: anything else, rather than a grammar looser than the schema.
    """
    rules: dict[str, str] = {}
    objects = itertools.count()

    def value(node: Mapping[str, Any], where: str) -> str:
        kind = "enum" if "enum" in node else node.get("type")
        if kind not in _SCHEMA_KEYS:
            raise GrammarError(f"{where}: unsupported schema {dict(node)!r}; supported: {', '.join(_SCHEMA_KEYS)}.")
        unknown = set(node) - _SCHEMA_KEYS[str(kind)] - _ANNOTATIONS
        if unknown:
            raise GrammarError(f"{where}: unsupported keys {sorted(unknown)} for {kind!r}.")
        if kind == "enum":
            return _value_rule(node, where)
        if kind == "object":
            prefix = f"o{next(objects)}"
            rules.update(_object_rules(prefix, node, where, value_rule=value))
            return f"{prefix}-args"
        if kind == "array":
            return _array_expression(value(node.get("items") or {}, f"{where}[]"), node, where)
        if kind == "string":
            return _string_expression(node, where, rules)
        return _value_rule(node, where)

    root = value(schema, "response format")
    lines = [f"root ::= {root}", *(f"{name} ::= {body}" for name, body in rules.items())]
    lines += [f"{name} ::= {body}" for name, body in _BASE_RULES.items()]
    return "\n".join(lines) + "\n"


def _array_expression(item: str, schema: Mapping[str, Any], where: str) -> str:
    least, most = schema.get("minItems", 0), schema.get("maxItems")
    if not isinstance(least, int) or least < 0 or (most is not None and (not isinstance(most, int) or most < least)):
        raise GrammarError(f"{where}: minItems and maxItems must be counts, minItems at most maxItems.")
    if most == 0:
        return '"[]"'
    more = "*" if most is None else f"{{{max(least - 1, 0)},{most - 1}}}"
    items = f'{item} (", " {item}){more}'
    return f'"[" {items} "]"' if least else f'"[" ({items})? "]"'


def _string_expression(schema: Mapping[str, Any], where: str, rules: dict[str, str]) -> str:
    least, most = schema.get("minLength", 0), schema.get("maxLength")
    if not isinstance(least, int) or least < 0 or (most is not None and (not isinstance(most, int) or most < least)):
        raise GrammarError(f"{where}: minLength and maxLength must be counts, minLength at most maxLength.")
    char = "char"
    pattern = schema.get("pattern")
    if pattern is not None:
        match = _NEGATED_CLASS.fullmatch(str(pattern))
        if match is None:
            raise GrammarError(f"{where}: pattern {pattern!r} is not one negated character class like '^[^0-9]*$'.")
        char = f"char-not-{_rule_name(match.group(1))}"
        rules[char] = f'[^"\\\\\\x7F\\x00-\\x1F{match.group(1)}] | "\\\\" ["\\\\/bfnrt]'
    if most is None and not least:
        return f'"\\"" {char}* "\\""'
    return f'"\\"" {char}{{{least},{"" if most is None else most}}} "\\""'


def validate_arguments(arguments: Any, parameters: Mapping[str, Any]) -> str | None:
    """Check parsed arguments against a tool's parameter schema; return the problem, or None when valid.

    The grammar already guarantees this; the parser checks again so that no call reaches the runner
    unchecked, whatever produced the text.
    """
    if not isinstance(arguments, dict):
        return "arguments must be a JSON object"
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    for key in parameters.get("required") or []:
        if key not in arguments:
            return f"missing required argument {key!r}"
    for key, value in arguments.items():
        schema = properties.get(key)
        if schema is None:
            return f"unknown argument {key!r}"
        enum = schema.get("enum")
        if enum is not None and value not in enum:
            return f"{key}={value!r} is not one of {enum}"
        kind = schema.get("type")
        ok = {
            "string": isinstance(value, str),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
        }.get(kind, enum is not None)
        if not ok:
            return f"{key}={value!r} is not of type {kind}"
    return None
