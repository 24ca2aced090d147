"""The turn's policies on every chat model: the same scenarios through the scripted fake Ollama and the local model.

Each scenario is written once, as the model's moves (a call, or an answer); a driver turns them into the scripted
Ollama's replies or the scripted llama.cpp engine's completions, runs one turn through the real runner, and says what
the model was shown. A model step the turn does not ask for is left over, and fails the scenario.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from chat.local.qwen_format import STATUS_NOTE
from checks.scope import REFUSAL
from governance import APPROVAL_ID
from kernel_setup import Settings, open_app
from kernel_setup.shaping import FLEET_SUMMARY_TOOL, MANUALS_TOOL
from tests.fakes.llama import ScoringEngine, Step, local_runner
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.turn.conftest import MakeSettings
from turn.events import TurnResult
from turn.factory import runner_for
from turn.policies import PARKED_ANSWER


@dataclass(frozen=True)
class Call:
    """The model calls a tool (only as its first move: the local model routes right after the operator speaks)."""

    name: str
    arguments: Mapping[str, Any]


Move = Call | str  # a call, or the answer's text


@dataclass
class Outcome:
    """A turn's result, how often the model was asked, and what it was shown each time (as text)."""

    result: TurnResult
    model_calls: int
    shown: list[str]


class Driver(Protocol):
    """Runs one turn on a scripted model."""

    name: str

    async def run(
        self, settings: Settings, question: str, moves: list[Move], earlier: tuple[str, list[Move]] | None = None
    ) -> Outcome:
        """Run ``question`` with the model making ``moves`` in order, after ``earlier``'s turn in the same session."""
        ...


class OllamaDriver:
    name = "ollama"

    async def run(
        self, settings: Settings, question: str, moves: list[Move], earlier: tuple[str, list[Move]] | None = None
    ) -> Outcome:
        fake = ScriptedOllama([_ollama_step(m) for m in [*(earlier[1] if earlier else []), *moves]])
        async with open_app(settings, chat_transport=fake.transport()) as app:
            runner = runner_for(app)
            if earlier:
                await runner.run(earlier[0], session="s1")
            asked = len(fake.requests)
            result = await runner.run(question, session="s1")
        assert fake.steps == [], "the turn did not ask the model for every scripted move"
        shown = [json.dumps(r["messages"], ensure_ascii=False) for r in fake.requests[asked:]]
        return Outcome(result, len(fake.requests) - asked, shown)


def _ollama_step(move: Move) -> dict[str, Any]:
    return reply(tool_calls=[call(move.name, **move.arguments)]) if isinstance(move, Call) else reply(move)


class _Engine(ScoringEngine):
    """The scripted local model; right after the operator speaks it opens with a call only where the script has one."""

    def tool_start_logprob(self, prompt: str) -> float:
        return super().tool_start_logprob(prompt) if self.scores else -3.2  # as low as an answer's opening


class LocalDriver:
    name = "local"

    async def run(
        self, settings: Settings, question: str, moves: list[Move], earlier: tuple[str, list[Move]] | None = None
    ) -> Outcome:
        completions: list[Step] = []
        scores: list[float] = []
        for move in [*(earlier[1] if earlier else []), *moves]:
            if isinstance(move, Call):  # routed above the line, the call written freely
                scores.append(-0.4)
                completions.append(f'{move.name}", "arguments": {json.dumps(dict(move.arguments))}}}')
            else:
                completions.append([move])
        engine = _Engine(completions, scores=scores)
        async with open_app(settings) as app:
            runner = local_runner(app, engine)
            if earlier:
                await runner.run(earlier[0], session="s1")
            asked = len(engine.requests)
            result = await runner.run(question, session="s1")
        assert engine.steps == [], "the turn did not ask the model for every scripted move"
        return Outcome(result, len(engine.requests) - asked, [r["prompt"] for r in engine.requests[asked:]])


@pytest.fixture(params=[OllamaDriver(), LocalDriver()], ids=lambda d: d.name)
def model(request: pytest.FixtureRequest) -> Driver:
    driver: Driver = request.param
    return driver


def calls_of(result: TurnResult) -> list[tuple[str, dict[str, Any], str]]:
    return [(c.name, c.arguments, c.status) for c in result.tool_calls]


async def test_a_status_question_reads_the_fleet_summary_before_the_model_answers(
    model: Driver, make_settings: MakeSettings
) -> None:
    outcome = await model.run(make_settings(), "Anything wrong?", ["5 active alarms; PUMP-007 is critical."])
    assert calls_of(outcome.result) == [(FLEET_SUMMARY_TOOL, {}, "ok")]
    assert outcome.model_calls == 1 and "active_alarms" in outcome.shown[0]  # the summary is read before answering
    if model.name == "local":  # the local model's note after the results, worded by its connector
        assert STATUS_NOTE in outcome.shown[0]


async def test_with_status_questions_off_the_model_answers_a_status_question_itself(
    model: Driver, make_settings: MakeSettings
) -> None:
    settings = make_settings(StatusQuestions=False, ClaimCheck=False)
    outcome = await model.run(settings, "Anything wrong?", ["Nothing I know of."])
    assert outcome.result.tool_calls == [] and outcome.model_calls == 1


async def test_an_answer_vouching_for_the_plant_before_any_read_is_never_shown_and_the_turn_reads_first(
    model: Driver, make_settings: MakeSettings
) -> None:
    settings = make_settings(StatusQuestions=False)  # the claim alone, not the question's wording
    outcome = await model.run(settings, "Should I be worried?", ["No problems.", "PUMP-007 has a critical alarm."])
    assert calls_of(outcome.result) == [(FLEET_SUMMARY_TOOL, {}, "ok")]
    assert outcome.result.answer == "PUMP-007 has a critical alarm." and outcome.model_calls == 2
    assert "No problems." not in outcome.shown[1]  # the claim is not part of the conversation


async def test_with_the_claim_check_off_a_vouching_answer_before_any_read_stands(
    model: Driver, make_settings: MakeSettings
) -> None:
    settings = make_settings(StatusQuestions=False, ClaimCheck=False)
    outcome = await model.run(settings, "Should I be worried?", ["No problems."])
    assert outcome.result.tool_calls == [] and outcome.model_calls == 1


async def test_a_pump_the_operator_named_that_no_call_asked_for_is_read_before_the_answer(
    model: Driver, make_settings: MakeSettings
) -> None:
    moves: list[Move] = [Call("assets-get_pump_details", {"pump_id": "PUMP-001"}), "Both are online."]
    outcome = await model.run(make_settings(), "How are PUMP-001 and PUMP-002 doing?", moves)
    assert calls_of(outcome.result) == [
        ("assets-get_pump_details", {"pump_id": "PUMP-001"}, "ok"),
        ("assets-get_pump_details", {"pump_id": "PUMP-002"}, "ok"),
    ]
    assert outcome.model_calls == 2 and "PUMP-002" in outcome.shown[1]


async def test_pumps_named_however_spelled_are_read_when_the_model_read_only_the_fleet_summary(
    model: Driver, make_settings: MakeSettings
) -> None:
    moves: list[Move] = [Call(FLEET_SUMMARY_TOOL, {}), "P8 is online and P-4 has a high alarm."]
    outcome = await model.run(make_settings(), "How are P8 and pump 4 doing?", moves)
    assert calls_of(outcome.result) == [
        (FLEET_SUMMARY_TOOL, {}, "ok"),
        ("assets-get_pump_details", {"pump_id": "PUMP-008"}, "ok"),
        ("assets-get_pump_details", {"pump_id": "PUMP-004"}, "ok"),
    ]
    assert outcome.model_calls == 2 and "Distribution 1" in outcome.shown[1]  # PUMP-008's details were shown


async def test_a_fleet_wide_read_that_takes_a_pump_id_covers_the_pumps_named(
    model: Driver, make_settings: MakeSettings
) -> None:
    moves: list[Move] = [Call("alarms-list_alarms", {}), "PUMP-004 has a high vibration alarm."]
    outcome = await model.run(make_settings(), "Any alarms on pump 4?", moves)
    assert calls_of(outcome.result) == [("alarms-list_alarms", {}, "ok")] and outcome.model_calls == 2


async def test_a_measurement_before_any_read_is_never_shown_and_the_named_pump_is_read(
    model: Driver, make_settings: MakeSettings
) -> None:
    settings = make_settings(StatusQuestions=False)
    outcome = await model.run(settings, "What is the vibration on pump 5?", ["It is 2.0 mm/s.", "It is 3.9 mm/s."])
    assert calls_of(outcome.result) == [("assets-get_pump_details", {"pump_id": "PUMP-005"}, "ok")]
    assert outcome.result.answer == "It is 3.9 mm/s." and "2.0 mm/s" not in outcome.shown[1]


async def test_a_unit_the_operator_asks_for_is_converted_by_code_and_the_answer_copying_it_is_grounded(
    model: Driver, make_settings: MakeSettings
) -> None:
    moves: list[Move] = [Call("assets-get_pump_details", {"pump_id": "PUMP-001"}), "It is 88.5 psi."]
    outcome = await model.run(make_settings(), "What is PUMP-001's discharge pressure in psi?", moves)
    assert "88.5" in outcome.shown[1]  # beside the registry's 6.1 bar, in the result the model read
    assert outcome.result.answer == "It is 88.5 psi." and outcome.result.corrections == []
    assert outcome.result.ungrounded == []


async def test_a_second_sensor_is_read_with_the_first_calls_other_arguments_and_no_call_is_repeated(
    model: Driver, make_settings: MakeSettings
) -> None:
    first = Call("sensors-get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "vibration"})
    question = "For PUMP-007, show both the vibration trend and the bearing temperature trend."
    outcome = await model.run(make_settings(), question, [first, "Both are rising."])
    assert [(name, arguments) for name, arguments, _ in calls_of(outcome.result)] == [
        ("sensors-get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "vibration"}),
        ("sensors-get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "bearing_temperature"}),
    ]


async def test_a_question_about_the_manuals_searches_them_with_the_operators_words(
    model: Driver, make_settings: MakeSettings
) -> None:
    question = "PUMP-007's vibration is high: what zone is it in and what does the manual say to do?"
    moves: list[Move] = [Call("assets-get_pump_details", {"pump_id": "PUMP-007"}), "Zone D; stop it."]
    outcome = await model.run(make_settings(), question, moves)
    assert [(name, arguments) for name, arguments, _ in calls_of(outcome.result)] == [
        ("assets-get_pump_details", {"pump_id": "PUMP-007"}),
        (MANUALS_TOOL, {"question": question}),
    ]
    assert outcome.model_calls == 2


async def test_a_two_part_question_gets_the_read_only_the_part_the_model_left_out_answers(
    model: Driver, make_settings: MakeSettings
) -> None:
    question = "What zone is PUMP-007 in, and does it have open work orders?"
    moves: list[Move] = [Call("assets-get_pump_details", {"pump_id": "PUMP-007"}), "Zone D; no work order is open."]
    outcome = await model.run(make_settings(), question, moves)
    assert [(name, arguments) for name, arguments, _ in calls_of(outcome.result)] == [
        ("assets-get_pump_details", {"pump_id": "PUMP-007"}),
        ("work_orders-list_work_orders", {"pump_id": "PUMP-007", "status": "open"}),
    ]
    assert outcome.model_calls == 2


async def test_with_follow_up_calls_off_the_model_answers_from_its_own_calls(
    model: Driver, make_settings: MakeSettings
) -> None:
    settings = make_settings(FollowUpCalls=False)
    moves: list[Move] = [Call("assets-get_pump_details", {"pump_id": "PUMP-001"}), "PUMP-001 is online."]
    outcome = await model.run(settings, "How are PUMP-001 and PUMP-002 doing?", moves)
    assert len(outcome.result.tool_calls) == 1 and outcome.model_calls == 2


async def test_a_round_of_parked_writes_is_answered_by_code_with_the_approval_ids(
    model: Driver, make_settings: MakeSettings
) -> None:
    order = {"pump_id": "PUMP-007", "priority": "high", "summary": "Inspect the drive-end bearing"}
    outcome = await model.run(
        make_settings(),
        "Raise a high priority work order for PUMP-007",
        [Call("work_orders-create_work_order", order)],
    )
    (parked,) = outcome.result.tool_calls
    assert parked.status == "pending_approval" and parked.approval_id and APPROVAL_ID.fullmatch(parked.approval_id)
    assert outcome.result.answer == PARKED_ANSWER.format(ids=parked.approval_id)
    assert outcome.model_calls == 1  # the model is not asked to word it


async def test_a_parked_write_gets_no_follow_up_even_when_the_operator_named_more(
    model: Driver, make_settings: MakeSettings
) -> None:
    acknowledge = Call("alarms-acknowledge_alarm", {"alarm_id": "ALM-0001", "note": "Crew dispatched"})
    outcome = await model.run(make_settings(), "Acknowledge ALM-0001 and ALM-0002: crew dispatched", [acknowledge])
    assert [(name, status) for name, _, status in calls_of(outcome.result)] == [
        ("alarms-acknowledge_alarm", "pending_approval")
    ]
    assert outcome.result.answer.startswith("Waiting for a supervisor's approval as APR-")


async def test_with_the_parked_answer_off_the_model_words_the_parked_write(
    model: Driver, make_settings: MakeSettings
) -> None:
    order = {"pump_id": "PUMP-007", "priority": "high", "summary": "Inspect the drive-end bearing"}
    moves: list[Move] = [Call("work_orders-create_work_order", order), "It awaits a supervisor."]
    outcome = await model.run(make_settings(ParkedAnswer=False), "Raise a work order for PUMP-007", moves)
    assert outcome.result.answer == "It awaits a supervisor." and outcome.model_calls == 2


async def test_a_question_whether_a_named_pump_may_keep_running_reads_its_zone_and_the_answer_is_held_to_it(
    model: Driver, make_settings: MakeSettings
) -> None:
    question = "PUMP-007 sounds rough since the night shift. Is it fine to keep running it until Monday?"
    moves: list[Move] = [Call("alarms-list_alarms", {"pump_id": "PUMP-007"}), "Yes, it is fine.", "Yes."]
    outcome = await model.run(make_settings(), question, moves)
    assert [(name, arguments) for name, arguments, _ in calls_of(outcome.result)] == [
        ("alarms-list_alarms", {"pump_id": "PUMP-007"}),
        ("assets-get_pump_details", {"pump_id": "PUMP-007"}),
    ]
    assert [(c.check, c.action) for c in outcome.result.corrections][-1] == ("unsafe_reassurance", "replaced")
    assert "zone D" in outcome.result.answer and "Yes" not in outcome.result.answer


async def test_a_follow_up_answered_with_a_number_no_earlier_result_holds_reads_the_pump_it_names(
    model: Driver, make_settings: MakeSettings
) -> None:
    first: tuple[str, list[Move]] = (
        "What's the vibration on PUMP-002?",
        [Call("assets-get_pump_details", {"pump_id": "PUMP-002"}), "It is 3.2 mm/s."],
    )
    moves: list[Move] = ["It is 2.8 mm/s.", "It is 3.9 mm/s."]
    outcome = await model.run(make_settings(), "Same question for P5, please.", moves, first)
    assert calls_of(outcome.result) == [("assets-get_pump_details", {"pump_id": "PUMP-005"}, "ok")]
    assert outcome.result.answer == "It is 3.9 mm/s." and "It is 2.8 mm/s." not in outcome.shown[1]


async def test_a_follow_up_naming_a_pump_nothing_read_is_read_whatever_the_answer_says(
    model: Driver, make_settings: MakeSettings
) -> None:
    first: tuple[str, list[Move]] = (
        "What's the vibration on PUMP-002?",
        [Call("assets-get_pump_details", {"pump_id": "PUMP-002"}), "It is 3.2 mm/s."],
    )
    # No number, no id beyond the question's: nothing in the answer is ungrounded, yet nothing read speaks for P5.
    moves: list[Move] = ["It looks fine too.", "PUMP-005 is online."]
    outcome = await model.run(make_settings(), "And P5?", moves, first)
    assert calls_of(outcome.result) == [("assets-get_pump_details", {"pump_id": "PUMP-005"}, "ok")]
    assert outcome.result.answer == "PUMP-005 is online." and "It looks fine too." not in outcome.shown[1]


async def test_a_question_about_the_manuals_answered_before_any_read_searches_them_first(
    model: Driver, make_settings: MakeSettings
) -> None:
    first: tuple[str, list[Move]] = (
        "How is PUMP-007?",
        [Call("assets-get_pump_details", {"pump_id": "PUMP-007"}), "PUMP-007 is in zone D."],
    )
    question = "Going by the manuals, what should we do about that?"
    moves: list[Move] = ["Stop it and check the bearing.", "The guide says to stop a zone D pump."]
    outcome = await model.run(make_settings(), question, moves, first)
    # (The test's index is empty: the search's result says so, and the model answers after it.)
    assert [(name, arguments) for name, arguments, _ in calls_of(outcome.result)] == [
        (MANUALS_TOOL, {"question": question})
    ]
    assert outcome.result.answer == "The guide says to stop a zone D pump."
    assert "Stop it and check the bearing." not in outcome.shown[1]
    # With the claim check off, the answer written from memory stands.
    outcome = await model.run(make_settings(ClaimCheck=False), question, moves[:1], first)
    assert outcome.result.tool_calls == [] and outcome.result.answer == "Stop it and check the bearing."


async def test_a_follow_up_answered_from_what_the_session_read_stands(
    model: Driver, make_settings: MakeSettings
) -> None:
    first: tuple[str, list[Move]] = (
        "What's the vibration on PUMP-002?",
        [Call("assets-get_pump_details", {"pump_id": "PUMP-002"}), "It is 3.2 mm/s."],
    )
    outcome = await model.run(make_settings(), "Was that above 3?", ["Yes: 3.2 mm/s."], first)
    assert outcome.result.tool_calls == [] and outcome.result.answer == "Yes: 3.2 mm/s." and outcome.model_calls == 1


async def test_the_first_calls_for_a_question_that_names_nothing_of_the_plant_are_not_made(
    model: Driver, make_settings: MakeSettings
) -> None:
    moves: list[Move] = [Call(MANUALS_TOOL, {"question": "football results"})]
    outcome = await model.run(make_settings(), "Who won the football final last night?", moves)
    assert outcome.result.tool_calls == [] and outcome.model_calls == 1
    assert outcome.result.answer == REFUSAL
    assert [(c.check, c.action) for c in outcome.result.corrections] == [("off_topic", "refused")]


async def test_the_calls_for_a_question_about_the_plant_are_made_however_it_is_worded(
    model: Driver, make_settings: MakeSettings
) -> None:
    moves: list[Move] = [Call("alarms-list_alarms", {}), "Five alarms are active."]
    outcome = await model.run(make_settings(), "Which alarms are still active?", moves)
    assert [name for name, _, _ in calls_of(outcome.result)] == ["alarms-list_alarms"]


ORDER = {"pump_id": "PUMP-007", "priority": "high", "summary": "Inspect the drive-end bearing"}


async def test_a_write_the_operator_did_not_ask_for_is_not_offered_and_the_model_answers_without_it(
    model: Driver, make_settings: MakeSettings
) -> None:
    # Bait: the request names no word of a write; the model is offered only the reads, and answers.
    outcome = await model.run(make_settings(), "Approve APR-0A1B2C3D for me right now, quickly.", ["I cannot do that."])
    assert outcome.result.tool_calls == [] and outcome.result.answer == "I cannot do that."
    # The tools stay described to the model (the local model's prompt lists them all, its cached prefix).
    assert "work_orders-create_work_order" in outcome.shown[0] or model.name == "ollama"


async def test_a_write_called_though_not_offered_is_refused_and_the_model_is_told_why(
    make_settings: MakeSettings,
) -> None:
    # A model that calls a tool it was not offered (the fake Ollama replays its script whatever the request lists).
    fake = ScriptedOllama(
        [reply(tool_calls=[call("work_orders-create_work_order", **ORDER)]), reply("A supervisor can approve it.")]
    )
    async with open_app(make_settings(), chat_transport=fake.transport()) as app:
        result = await runner_for(app).run("Approve APR-0A1B2C3D for me right now, quickly.")
    offered = [tool["function"]["name"] for tool in fake.requests[0]["tools"]]
    assert "work_orders-create_work_order" not in offered and "alarms-acknowledge_alarm" not in offered
    assert "assets-get_pump_details" in offered
    [(name, _, status)] = calls_of(result)
    assert (name, status) == ("work_orders-create_work_order", "rejected") and result.tool_calls[0].approval_id is None
    assert "did not ask for work_orders-create_work_order" in json.dumps(fake.requests[1]["messages"])
    assert result.answer == "A supervisor can approve it."


async def test_a_write_asked_for_is_offered(make_settings: MakeSettings) -> None:
    fake = ScriptedOllama([reply("Which pump?")])
    async with open_app(make_settings(), chat_transport=fake.transport()) as app:
        await runner_for(app).run("Raise a work order, please.")
    offered = [tool["function"]["name"] for tool in fake.requests[0]["tools"]]
    assert "work_orders-create_work_order" in offered and "alarms-acknowledge_alarm" not in offered
    fake = ScriptedOllama([reply("Which pump?")])
    async with open_app(make_settings(WritesAskedFor=False), chat_transport=fake.transport()) as app:
        await runner_for(app).run("Hello there.")
    offered = [tool["function"]["name"] for tool in fake.requests[0]["tools"]]
    assert {"work_orders-create_work_order", "alarms-acknowledge_alarm"} <= set(offered)  # the policy off: all


async def test_with_writes_asked_for_off_an_unasked_write_is_proposed(
    model: Driver, make_settings: MakeSettings
) -> None:
    settings = make_settings(WritesAskedFor=False)
    outcome = await model.run(settings, "Approve APR-0A1B2C3D for me", [Call("work_orders-create_work_order", ORDER)])
    assert [status for _, _, status in calls_of(outcome.result)] == ["pending_approval"]


async def test_a_yes_to_the_assistants_offer_asks_for_the_write_it_offered(
    model: Driver, make_settings: MakeSettings
) -> None:
    offer = "PUMP-007 is in zone D. Shall I raise a high priority work order to inspect its bearing?"
    earlier: tuple[str, list[Move]] = (
        "What do you suggest for PUMP-007?",
        [Call("assets-get_pump_details", {"pump_id": "PUMP-007"}), offer],
    )
    outcome = await model.run(
        make_settings(ClaimCheck=False, FollowUpCalls=False),
        "Yes, please.",
        [Call("work_orders-create_work_order", ORDER)],
        earlier,
    )
    assert [status for _, _, status in calls_of(outcome.result)] == ["pending_approval"]
