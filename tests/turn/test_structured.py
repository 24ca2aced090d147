"""Structured answers (``Agent.StructuredAnswers``) through the real runner on both chat services: the scripted fake
Ollama and the local connector on a scripted engine. The model's reply only cites records; code writes the answer.

The scripted model reads the records it was shown (the last message of the request) and cites them by what they say,
as a model would, so the tests do not depend on how the records happen to be numbered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
import pytest

from chat.local.grammar import json_schema_grammar
from checks.structured import answer_schema
from kernel_setup import Settings, load_settings, open_app
from tests.fakes.llama import ScriptedEngine, Step, local_runner
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.postgres_server import database_section
from turn.events import TextDelta, TurnFinished, TurnResult
from turn.factory import runner_for

QUESTION = "How is PUMP-007 doing?"
DRAFT = "PUMP-007 vibrates at 9.4 mm/s."
ZONE = "PUMP-007: vibration 9.4 mm/s, ISO 10816-3 zone D (severe enough to cause damage)."
TEMPERATURE_ALARM = (
    "Active alarm ALM-0003 (medium) on PUMP-007, bearing temperature: Drive-end bearing temperature rising: "
    "81 °C (alarm level 85 °C)."
)
_RECORD_LINE = re.compile(r"^(E\d+) (.*)$", re.MULTILINE)

Reply = Callable[[str], str]
"""The model's structured reply, given the request it was shown."""


def records_shown(request: str) -> dict[str, str]:
    """The records a structured request lists, by id."""
    return dict(_RECORD_LINE.findall(request))


def citing(*wanted: str, note: str = "", extra: tuple[str, ...] = ()) -> Reply:
    """A reply citing the record whose line holds each of ``wanted`` (one each), then the ids in ``extra``."""

    def reply_to(request: str) -> str:
        shown = records_shown(request)
        ids = [next(i for i, line in shown.items() if words in line) for words in wanted]
        return json.dumps({"claims": [{"record": i} for i in [*ids, *extra]], "note": note})

    return reply_to


@dataclass
class Outcome:
    result: TurnResult
    streamed: str
    model_calls: int
    requests: list[dict[str, Any]]
    """What each model call was sent: Ollama's request bodies, or the local engine's completion requests."""


class Driver(Protocol):
    name: str

    async def run(self, settings: Settings, question: str, answers: list[str | Reply]) -> Outcome:
        """A turn where the model reads PUMP-007's details, then gives ``answers`` in order."""
        ...


async def _finish(events: list[Any]) -> tuple[TurnResult, str]:
    assert isinstance(events[-1], TurnFinished)
    return events[-1].result, "".join(e.text for e in events if isinstance(e, TextDelta))


class OllamaDriver:
    name = "ollama"

    async def run(self, settings: Settings, question: str, answers: list[str | Reply]) -> Outcome:
        def step(answer: str | Reply) -> Any:
            if isinstance(answer, str):
                return reply(answer)
            return lambda body: httpx.Response(200, json=reply(answer(body["messages"][-1]["content"])))

        fake = ScriptedOllama(
            [reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-007")]), *map(step, answers)]
        )
        async with open_app(settings, chat_transport=fake.transport()) as app:
            result, streamed = await _finish([e async for e in runner_for(app).stream(question)])
        assert fake.steps == [], "the turn did not ask the model for every scripted answer"
        return Outcome(result, streamed, len(fake.requests), fake.requests)


class LocalDriver:
    name = "local"

    async def run(self, settings: Settings, question: str, answers: list[str | Reply]) -> Outcome:
        def step(answer: str | Reply) -> Step:
            if isinstance(answer, str):
                return [answer]
            return lambda prompt: answer(prompt.rsplit("<|im_start|>user\n", 1)[1])

        engine = ScriptedEngine(
            ["assets-get_pump_details", '{"pump_id": "PUMP-007"}}\n</tool_call>', *map(step, answers)]
        )
        async with open_app(settings) as app:
            result, streamed = await _finish([e async for e in local_runner(app, engine).stream(question)])
        assert engine.steps == [], "the turn did not ask the model for every scripted answer"
        return Outcome(result, streamed, len(engine.requests), engine.requests)


@pytest.fixture(params=[OllamaDriver(), LocalDriver()], ids=lambda d: d.name)
def model(request: pytest.FixtureRequest) -> Driver:
    driver: Driver = request.param
    return driver


class MakeSettings(Protocol):
    """Settings with structured answers on (or off), in the test's folder, on the test's database (either backend)."""

    def __call__(self, *, structured: bool = True) -> Settings: ...


@pytest.fixture
def make_settings(tmp_path: Path, database_target: str | Path) -> MakeSettings:
    def make(*, structured: bool = True) -> Settings:
        path = tmp_path / "appsettings.json"
        agent = {"StructuredAnswers": structured}
        database = database_section(database_target, "t.db")
        path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, "Agent": agent}))
        return load_settings(path, env={})

    return make


def outcomes(result: TurnResult) -> list[tuple[str, str, str]]:
    return [(c.check, c.action, c.finding) for c in result.corrections]


def structured_request(outcome: Outcome) -> tuple[str, dict[str, Any] | str]:
    """The last request's message (the records) and what constrained its answer (Ollama's format, the grammar)."""
    last = outcome.requests[-1]
    if "messages" in last:
        assert not last.get("tools")  # an answer, not a call, is asked for
        return last["messages"][-1]["content"], last["format"]
    return last["prompt"].rsplit("<|im_start|>user\n", 1)[1], last["grammar"]


async def test_the_answer_is_written_from_the_cited_records_with_the_results_numbers(
    model: Driver, make_settings: MakeSettings
) -> None:
    cite = citing("PUMP-007 vibration zone D", "ALM-0003", note="It needs attention")
    outcome = await model.run(make_settings(), QUESTION, [DRAFT, cite])
    result = outcome.result
    assert result.answer == f"It needs attention.\n{ZONE}\n{TEMPERATURE_ALARM}"
    assert outcome.streamed == result.answer  # the draft was never shown
    assert result.ungrounded == [] and result.misattributed_numbers == [] and not result.degraded
    request, constraint = structured_request(outcome)
    ids = list(records_shown(request))
    [(check, action, finding)] = outcomes(result)
    zone, alarm = (next(i for i, line in records_shown(request).items() if w in line) for w in ("zone D", "ALM-0003"))
    assert (check, action, finding) == ("structured_answer", "written", f"cited {zone}, {alarm}")
    # The reply could only cite this turn's records: the schema (Ollama) or its grammar (local) names exactly them.
    schema = answer_schema(ids)
    assert constraint == (schema if model.name == "ollama" else json_schema_grammar(schema))
    assert result.usage.model_calls == 3  # the call, the model's own answer, the structured answer


async def test_a_cited_record_the_turn_does_not_hold_is_dropped_and_said(
    model: Driver, make_settings: MakeSettings
) -> None:
    outcome = await model.run(make_settings(), QUESTION, [DRAFT, citing("zone D", extra=("E99",))])
    assert outcome.result.answer == ZONE
    assert [(c, a) for c, a, _ in outcomes(outcome.result)] == [
        ("structured_answer", "written"),
        ("structured_answer", "dropped"),
    ]
    assert outcomes(outcome.result)[1][2] == "E99 is no record of this turn's results"


async def test_with_the_setting_off_the_models_own_answer_is_shown_and_nothing_more_is_asked(
    model: Driver, make_settings: MakeSettings
) -> None:
    outcome = await model.run(make_settings(structured=False), QUESTION, [DRAFT])
    assert outcome.result.answer == DRAFT == outcome.streamed and outcome.result.corrections == []
    assert outcome.result.usage.model_calls == 2
    assert all("format" not in r or r["format"] is None for r in outcome.requests)  # Ollama: no format sent
    assert all("claims" not in (r.get("grammar") or "") for r in outcome.requests)  # local: no answer grammar


async def test_a_reply_that_is_not_the_json_asked_for_leaves_the_models_own_answer(
    model: Driver, make_settings: MakeSettings
) -> None:
    outcome = await model.run(make_settings(), QUESTION, [DRAFT, lambda _: "PUMP-007 is fine."])
    assert outcome.result.answer == DRAFT
    [(check, action, finding)] = outcomes(outcome.result)
    assert (check, action) == ("structured_answer", "kept_text") and "not the JSON asked for" in finding


async def test_the_written_answer_is_still_checked_and_a_reassuring_note_is_stopped(
    model: Driver, make_settings: MakeSettings
) -> None:
    question = "PUMP-007 is at 9.4 mm/s; should it keep running?"
    corrected = "No. PUMP-007 is in ISO 10816-3 zone D (severe enough to cause damage): stop it for repair."
    reassuring = citing("zone D", note="Yes, it can keep running")
    outcome = await model.run(make_settings(), question, [DRAFT, reassuring, corrected])
    assert outcome.result.answer == corrected
    assert list(dict.fromkeys((c, a) for c, a, _ in outcomes(outcome.result))) == [
        ("structured_answer", "written"),
        ("unsafe_reassurance", "retried"),
    ]


async def test_a_turn_that_read_nothing_is_answered_by_the_model_alone(make_settings: MakeSettings) -> None:
    fake = ScriptedOllama([reply("Hello! I answer questions about pumps, alarms and manuals.")])
    async with open_app(make_settings(), chat_transport=fake.transport()) as app:
        result = await runner_for(app).run("Hello, what can you do?")
    assert result.answer.startswith("Hello!") and result.corrections == [] and len(fake.requests) == 1


def test_the_setting_is_off_by_default_and_a_file_or_the_environment_turns_it_on(tmp_path: Path) -> None:
    path = tmp_path / "appsettings.json"
    path.write_text("{}")
    assert load_settings(path, env={}).agent.structured_answers is False
    assert load_settings(path, env={"PUMPOPS_Agent__StructuredAnswers": "true"}).agent.structured_answers is True
    path.write_text(json.dumps({"Agent": {"StructuredAnswers": True}}))
    assert load_settings(path, env={}).agent.structured_answers is True
