"""The Qwen2.5 chat format (ChatML with ``<tool_call>`` blocks): prompts out, tool calls back in.

Rendered here rather than by llama-cpp-python's template engine so that the exact prompt is
testable without the model and the routing and call phases can share one prompt prefix (llama.cpp
then reuses the evaluated prefix from its KV cache). The layout follows the model's own chat
template: tools listed in the system message, calls as ``<tool_call>`` JSON blocks, results sent
back in a user turn as ``<tool_response>`` blocks in call order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from chat.local.grammar import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    validate_arguments,
)
from chat.mentions import Mentions, tool_function, tool_schemas

__all__ = [
    "STOP_STRINGS",
    "ParsedCall",
    "PromptMessage",
    "parse_tool_calls",
    "render_prompt",
    "routing_prompt",
    "strict_tool_calls",
]

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
STOP_STRINGS = [IM_END, "<|endoftext|>", "<tools>"]
"""Where a completion ends: the turn's end, or the prompt's tool list being pasted back (an answer to "What is the
capital of France?" went on with the whole list after "Here are the steps:"; the list is never the operator's)."""

_TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_POSTAMBLE = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n'
    "</tool_call>\n\n"
)

ANSWER_STYLE = (
    "When you answer the operator, write plain sentences, never JSON or code. "
    "Reply to greetings, thanks and small talk in words, without tools."
)

# After the tool results: a small model otherwise recites the whole result (reading it aloud costs
# seconds per sentence on two cores).
RESULTS_NOTE = "Answer from these results in one short sentence with the key values and pump ids."
# Our own words, outside the fenced data: the result itself says so too, but as data the model must not obey.
# After the fleet summary a terse status question reads ("Are we OK?"): alarms first, so the model never echoes the
# question's all-clear over active alarms, and only the pumps the results name, since the summary names the worst one.
STATUS_NOTE = (
    "Start with the active alarms by severity, naming only pumps these results name; never say all is well while "
    "any is active."
)
PARKED_NOTE = "An action above was parked for a supervisor's approval and has not run: say so, with its approval id."
ROUTING_HEAD = (
    "Routing step, not shown to the operator. Choose what to do next for the operator's last message and reply "
    "with exactly one option name:\n"
    "- no_tool: no tool is needed: a greeting, thanks, small talk, a question about you or something unrelated to "
    "pump operations; or the tool results above already contain what is needed.\n"
    "Hints: a message naming one pump id (like PUMP-007) asks about that pump, so prefer the tool for one pump; "
    "questions about procedures, standards, limits, causes or manuals go to the documentation search; "
    "the fleet summary is only for questions about the whole fleet.\n"
)
_USE_SENTENCE = re.compile(r"[^.]*\b(?:Use it|Use this|Call this|Call it)\b[^.]*\.")
# The opening sentence saying what a tool returns: up to the first full stop followed by a capital.
_RETURNS_SENTENCE = re.compile(r"^Returns\b.*?\.\s+(?=[A-Z])", re.DOTALL)
_ASIDE = re.compile(r" \([^()]*\)")


@dataclass
class PromptMessage:
    """One message in the model's terms."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    parked: bool = False
    """A tool result the approval gate parked (known from the runner, not from the result's text)."""
    approval_id: str = ""
    """A parked result's approval id, read from the gate's payload and checked for its form ("" when unknown)."""
    status_question: bool = False
    """A result the turn read for a terse status question (`kernel_setup.shaping.STATUS_QUESTION`)."""


@dataclass(frozen=True)
class ParsedCall:
    """A tool call read back from the model's output, already checked against its schema."""

    name: str
    arguments: dict[str, Any]


def _system_text(system: str, tools: Sequence[Mapping[str, Any]]) -> str:
    if not tools:
        return system
    # The tools come first: the system prompt carries a per-turn marker, and everything before it is
    # the same on every turn, so llama.cpp reuses that prefix from its cache.
    listed = "".join("\n" + _compact(tool) for tool in tools)
    return _TOOLS_PREAMBLE + listed + _TOOLS_POSTAMBLE + ANSWER_STYLE + "\n\n" + system


def _compact(tool: Mapping[str, Any]) -> str:
    """One tool as compact JSON (fewer prompt tokens than the indented or spaced form), in brief.

    The list is most of the cached prompt (1,859 of about 2,170 tokens with the tools as every model gets them),
    and every later token of a turn is read or written after it: on two cores a deeper position costs more (a
    200-token read at position 2,300 took 3.3 s against 2.5-2.7 s at 100). So the local model's list leaves out
    the asides of a description's opening "Returns ..." sentence (the fields it lists in brackets) and the
    descriptions of optional parameters (a call keeps an optional filter only where the conversation mentions
    its value, `strict_tool_calls`): 1,528 tokens. Names, types, enums, the "Use it ..." sentences and the
    required parameters' descriptions stay. Measured with ``pumpops eval``: leaving out the whole "Returns ..."
    sentence as well (1,211 tokens) sent "What is the vibration zone of PUMP-004?" to the trend tool and cost a
    single-tool and an irrelevance item; this form scored as the full list did (two eval runs, 2026-12-05).
    """
    function = tool_function(tool)
    shown = {k: function[k] for k in ("name", "description", "parameters") if k in function}
    if isinstance(shown.get("description"), str):
        shown["description"] = _brief_description(shown["description"])
    if isinstance(shown.get("parameters"), Mapping):
        shown["parameters"] = _required_described(shown["parameters"])
    return json.dumps({"type": "function", "function": shown}, ensure_ascii=False, separators=(",", ":"))


def _brief_description(description: str) -> str:
    """``description`` with the asides of its opening "Returns ..." sentence left out (the fields it lists)."""
    returns = _RETURNS_SENTENCE.match(description)
    if returns is None:
        return description
    return _ASIDE.sub("", returns.group(0)) + description[returns.end() :]


def _required_described(parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    """A parameters schema whose optional properties carry no description (a copy; the tool's own is untouched)."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return parameters
    required = set(parameters.get("required") or ())
    kept = {
        name: schema
        if name in required or not isinstance(schema, Mapping)
        else {k: v for k, v in schema.items() if k != "description"}
        for name, schema in properties.items()
    }
    return {**parameters, "properties": kept}


def when_to_use(tool: Mapping[str, Any], limit: int = 200) -> str:
    """The sentence of a tool's description that says when to use it (else its first sentence)."""
    description = str(tool_function(tool).get("description") or "")
    match = _USE_SENTENCE.search(description)
    sentence = match.group(0).strip() if match else description.split(". ")[0].strip()
    return sentence[:limit]


def _results_note(results: Sequence[PromptMessage]) -> str:
    """Our note after a round's results: how to answer from them.

    (A round whose every call was parked never reaches the model: the turn answers it, `turn.policies`.)
    """
    if any(result.parked for result in results):
        return f"{RESULTS_NOTE} {PARKED_NOTE}"
    if any(result.status_question for result in results):
        return f"{RESULTS_NOTE} {STATUS_NOTE}"
    return RESULTS_NOTE


def _call_block(name: str, arguments: Mapping[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"


def render_prompt(
    messages: Sequence[PromptMessage], tools: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = True
) -> str:
    """The prompt text for ``messages`` with ``tools`` advertised, ending with an open assistant turn.

    The first system message (or an empty one) carries the tool list; consecutive tool results are
    merged into one user turn of ``<tool_response>`` blocks, as the model's template does.
    """
    parts: list[str] = []
    rest = list(messages)
    system = ""
    if rest and rest[0].role == "system":
        system = rest.pop(0).content
    if system or tools:
        parts.append(f"{IM_START}system\n{_system_text(system, tools)}{IM_END}\n")
    i = 0
    while i < len(rest):
        message = rest[i]
        if message.role == "tool":
            results: list[PromptMessage] = []
            while i < len(rest) and rest[i].role == "tool":
                results.append(rest[i])
                i += 1
            blocks = "\n".join(f"<tool_response>\n{result.content}\n</tool_response>" for result in results)
            parts.append(f"{IM_START}user\n{blocks}\n{_results_note(results)}{IM_END}\n")
            continue
        if message.role == "assistant":
            pieces = [message.content] if message.content else []
            pieces += [_call_block(name, args) for name, args in message.tool_calls]
            parts.append(f"{IM_START}assistant\n" + "\n".join(pieces) + f"{IM_END}\n")
        else:
            parts.append(f"{IM_START}{message.role}\n{message.content}{IM_END}\n")
        i += 1
    if add_generation_prompt:
        parts.append(f"{IM_START}assistant\n")
    return "".join(parts)


def routing_prompt(conversation_prompt: str, tools: Sequence[Mapping[str, Any]], last_user: str = "") -> str:
    """The routing step's prompt: the conversation (without its open assistant turn) plus the choice.

    The options are ``answer`` and each tool's name with the sentence saying when to use it. It
    shares the conversation's prefix, so llama.cpp evaluates only the tokens added here.
    """
    opening = f"{IM_START}assistant\n"
    base = conversation_prompt[: -len(opening)] if conversation_prompt.endswith(opening) else conversation_prompt
    options = "".join(f"- {tool_function(t).get('name')}: {when_to_use(t)}\n" for t in tools)
    quoted = f"The operator's last message: {json.dumps(last_user, ensure_ascii=False)}\n" if last_user else ""
    return f"{base}{IM_START}system\n{ROUTING_HEAD}{options}{quoted}Reply with the option name only.{IM_END}\n{opening}"


def parse_tool_calls(text: str, tools: Sequence[Mapping[str, Any]], said: Mentions | None = None) -> list[ParsedCall]:
    """Read every complete, valid ``<tool_call>`` block from ``text``, in order, without duplicates.

    A block that does not parse, names an unadvertised tool, or whose arguments break the tool's
    schema is dropped (a truncated last block included); the caller decides what an empty list means.
    With ``said``, optional arguments whose value the conversation never mentioned are left out
    (`Mentions.grounded`) before the schema is checked: a filter nobody asked for narrows the answer
    silently, and one written badly (``"min_value": ""``) would only be left out after a retry.
    """
    schemas = tool_schemas(tools)
    calls: list[ParsedCall] = []
    for name, arguments in _blocks(text):
        if name not in schemas:
            continue
        if said is not None and isinstance(arguments, dict):
            arguments = said.grounded(arguments, schemas[name])
        if validate_arguments(arguments, schemas[name]) is not None:
            continue
        call = ParsedCall(name, dict(arguments))
        if call not in calls:
            calls.append(call)
    return calls


def _blocks(text: str) -> Iterator[tuple[str, Any]]:
    """The name and raw arguments of every complete ``<tool_call>`` block that parses as a call object."""
    position = 0
    while True:
        start = text.find(TOOL_CALL_OPEN, position)
        if start < 0:
            return
        end = text.find(TOOL_CALL_CLOSE, start)
        if end < 0:
            return
        position = end + len(TOOL_CALL_CLOSE)
        try:
            obj = json.loads(text[start + len(TOOL_CALL_OPEN) : end])
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            yield obj["name"], obj.get("arguments", {})


def strict_tool_calls(
    text: str, tools: Sequence[Mapping[str, Any]], said: Mentions, *, max_calls: int
) -> list[ParsedCall]:
    """The calls of ``text`` when it is nothing but well-formed, valid calls; otherwise none.

    That is: nothing but one to ``max_calls`` complete blocks (whitespace between them), every one
    valid and distinct once optional values nobody mentioned are left out (as from every call, see
    `parse_tool_calls`), and no optional enum value other than the mentioned ones where one was
    mentioned (the grammar allows only those). Such greedy output is what greedy decoding under the
    call grammar gives, except for optional values nobody mentioned, which are left out either way;
    so the grammar's per-token cost is paid only on a retry (a required argument missing or invalid,
    a mentioned enum value missed, a malformed block, text around the calls).
    """
    blocks = text.count(TOOL_CALL_OPEN)
    outside = _BLOCK.sub("", text).strip()
    calls = parse_tool_calls(text, tools, said)
    if outside or not 0 < blocks <= max_calls or len(calls) != blocks:
        return []
    schemas = tool_schemas(tools)
    if not all(said.allows(arguments, schemas[name]) for name, arguments in _blocks(text)):
        return []
    return calls


_BLOCK = re.compile(re.escape(TOOL_CALL_OPEN) + ".*?" + re.escape(TOOL_CALL_CLOSE), re.DOTALL)
