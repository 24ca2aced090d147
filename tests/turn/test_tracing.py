"""A traced turn against the scripted fake Ollama: invoke_agent, its chat calls and its execute_tool calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kernel_setup import open_app
from tests.fakes.ollama import MODEL, ScriptedOllama, call, reply
from tests.tracing_support import all_attribute_text, named, parent_of, span_id, traced_settings
from turn.events import ToolCallStarted, TurnEvent
from turn.factory import runner_for

REPO = Path(__file__).resolve().parents[2]
QUESTION = "Details of PUMP-007 and the system summary?"
# The model's own moves only: no policy adds a read around them.
MODEL_ONLY = {"StatusQuestions": False, "FollowUpCalls": False, "ClaimCheck": False}


def two_tool_turn() -> ScriptedOllama:
    return ScriptedOllama(
        [
            reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-007"), call("assets-get_system_summary")]),
            reply("PUMP-007 vibrates at 9.4 mm/s; the fleet has alarms.", prompt_eval_count=300, eval_count=12),
        ]
    )


@dataclass
class Traced:
    exporter: InMemorySpanExporter
    events: list[TurnEvent]
    audit_rows: list[Any]


async def traced_turn(tmp_path: Path, *, include_content: bool = False) -> Traced:
    exporter = InMemorySpanExporter()
    settings = traced_settings(tmp_path, include_content=include_content, Agent=MODEL_ONLY)
    fake = two_tool_turn()
    async with open_app(settings, chat_transport=fake.transport(), span_exporter=exporter) as app:
        events = [event async for event in runner_for(app).stream(QUESTION, session="s-trace", principal="alice")]
        rows = await app.db.fetch_all("SELECT id, function, row_hash FROM audit_log ORDER BY id")
    return Traced(exporter, events, rows)


async def test_a_two_tool_turn_is_one_invoke_agent_span_with_two_chat_spans_and_two_execute_tool_spans(
    tmp_path: Path,
) -> None:
    traced = await traced_turn(tmp_path)
    spans = traced.exporter.get_finished_spans()
    [agent] = named(spans, "invoke_agent")
    chats = named(spans, "chat ")
    tools = named(spans, "execute_tool ")
    assert agent.name == "invoke_agent pumpops" and parent_of(agent) is None
    assert agent.attributes is not None and agent.attributes["gen_ai.conversation.id"] == "s-trace"
    assert (agent.attributes["gen_ai.usage.input_tokens"], agent.attributes["gen_ai.usage.output_tokens"]) == (420, 42)
    assert [c.name for c in chats] == [f"chat {MODEL}", f"chat {MODEL}"]
    assert all(parent_of(c) == span_id(agent) for c in [*chats, *tools])
    first, second = (c.attributes or {} for c in chats)
    assert first["gen_ai.request.model"] == MODEL and first["gen_ai.operation.name"] == "chat"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (120, 30)
    assert (second["gen_ai.usage.input_tokens"], second["gen_ai.usage.output_tokens"]) == (300, 12)
    assert first["gen_ai.response.finish_reasons"] == ("stop",)
    # Order in the turn: the first model call, then its two tools, then the answering model call.
    times = [(s.start_time or 0, s.end_time or 0) for s in (chats[0], *tools, chats[1])]
    assert times[0][1] <= min(start for start, _ in times[1:3]) and max(end for _, end in times[1:3]) <= times[3][0]
    assert sorted(t.name for t in tools) == [
        "execute_tool assets-get_pump_details",
        "execute_tool assets-get_system_summary",
    ]
    started = {e.name: e.call_id for e in traced.events if isinstance(e, ToolCallStarted)}
    for tool in tools:
        attributes = tool.attributes or {}
        assert attributes["pumpops.tool.outcome"] == "ok" and attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["gen_ai.tool.call.id"] == started[str(attributes["gen_ai.tool.name"])] != ""


async def test_each_execute_tool_span_names_the_audit_row_of_its_invocation(tmp_path: Path) -> None:
    traced = await traced_turn(tmp_path)
    rows = {row["id"]: (row["function"], row["row_hash"]) for row in traced.audit_rows}
    tools = named(traced.exporter.get_finished_spans(), "execute_tool ")
    assert len(tools) == 2 == len(rows)
    for tool in tools:
        attributes = tool.attributes or {}
        function, row_hash = rows[attributes["pumpops.audit.id"]]
        assert (function, row_hash) == (attributes["gen_ai.tool.name"], attributes["pumpops.audit.hash"])


async def test_no_argument_question_or_result_text_is_on_any_span_by_default(tmp_path: Path) -> None:
    spans = (await traced_turn(tmp_path)).exporter.get_finished_spans()
    text = all_attribute_text(spans)
    assert "PUMP-007" not in text and "9.4" not in text
    assert not any(
        key in (s.attributes or {})
        for s in spans
        for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages")
    )


async def test_with_include_content_the_arguments_results_question_and_answer_are_on_the_spans(tmp_path: Path) -> None:
    spans = (await traced_turn(tmp_path, include_content=True)).exporter.get_finished_spans()
    details = next(s for s in named(spans, "execute_tool assets-get_pump_details"))
    assert details.attributes is not None
    assert details.attributes["gen_ai.tool.call.arguments"] == '{"pump_id": "PUMP-007"}'
    assert "PUMP-007" in str(details.attributes["gen_ai.tool.call.result"])
    [agent] = named(spans, "invoke_agent")
    assert agent.attributes is not None and QUESTION in str(agent.attributes["gen_ai.input.messages"])
    assert "9.4 mm/s" in str(agent.attributes["gen_ai.output.messages"])


SK_DIAGNOSTICS_RUN = """
import asyncio, json, sys
from pathlib import Path
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from kernel_setup import open_app
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.tracing_support import traced_settings
from turn.factory import runner_for

async def main() -> None:
    exporter = InMemorySpanExporter()
    fake = ScriptedOllama([reply(tool_calls=[call("assets-get_system_summary")]), reply("All quiet.")])
    settings = traced_settings(Path(sys.argv[1]), Agent={"StatusQuestions": False, "FollowUpCalls": False})
    async with open_app(settings, chat_transport=fake.transport(), span_exporter=exporter) as app:
        await runner_for(app).run("The system summary?")
    spans = exporter.get_finished_spans()
    print(json.dumps(sorted([s.name, s.instrumentation_scope.name] for s in spans)))

asyncio.run(main())
"""


def test_semantic_kernels_own_diagnostics_switched_on_add_no_span_to_the_trace(tmp_path: Path) -> None:
    # SK reads these variables when it is imported, so the turn runs in a process started with them set.
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS": "true",
        "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE": "true",
    }
    done = subprocess.run(
        [sys.executable, "-c", SK_DIAGNOSTICS_RUN, str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        ["chat qwen2.5:7b-instruct", "pumpops"],
        ["chat qwen2.5:7b-instruct", "pumpops"],
        ["execute_tool assets-get_system_summary", "pumpops"],
        ["invoke_agent pumpops", "pumpops"],
    ]
