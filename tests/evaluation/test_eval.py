"""The evaluation harness without a model: the question set loads and validates; the scorer over recorded turns."""

import json
from datetime import date
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from doors.cli.common import CliState
from doors.cli.eval_cmd import print_report
from doors.cli.main import app as cli_app
from evaluation import (
    Category,
    GoldenItem,
    Transcript,
    load_questions,
    score_report,
    score_trial,
    select_questions,
)
from evaluation.questions import EvalQuestionsError
from evaluation.runner import throwaway_settings
from kernel_setup import Settings, open_app
from kernel_setup.settings import ChatProvider
from turn.events import ToolCallRecord, TurnResult, Usage


def turn(
    answer: str, *calls: tuple[str, dict[str, Any], str], ungrounded: list[str] | None = None, model_calls: int = 2
) -> TurnResult:
    records = [ToolCallRecord(name=n, arguments=a, status=s, summary="", duration_ms=1.0) for n, a, s in calls]
    return TurnResult(
        answer=answer,
        tool_calls=records,
        ungrounded=ungrounded or [],
        usage=Usage(model_calls=model_calls),
        session="s",
    )


DETAILS = GoldenItem.model_validate(
    {
        "id": "d7",
        "category": "single_tool",
        "question": "How is PUMP-007?",
        "calls": [{"name": ["assets-get_pump_details"], "arguments": {"pump_id": "PUMP-007"}}],
        "also_allowed": ["alarms-list_alarms"],
        "facts": ["9.4", ["zone D", "zone-D"]],
    }
)
SMALL_TALK = GoldenItem.model_validate({"id": "hi", "category": "irrelevance", "question": "Hello"})
WRITE = GoldenItem.model_validate(
    {
        "id": "wo",
        "category": "write",
        "question": "Raise a work order",
        "calls": [
            {
                "name": ["work_orders-create_work_order"],
                "arguments": {"pump_id": "PUMP-007", "priority": {"one_of": ["high", "urgent"]}},
                "status": "pending_approval",
            }
        ],
    }
)


def test_a_correct_grounded_turn_passes() -> None:
    t = Transcript(
        item_id="d7",
        trial=0,
        result=turn("PUMP-007: 9.4 mm/s, Zone D.", ("assets-get_pump_details", {"pump_id": "pump-007"}, "ok")),
    )
    score = score_trial(DETAILS, t)
    assert score.passed and score.tool_selection and score.arguments and score.fact_recall == 1.0 and score.grounded
    assert score.answer == "PUMP-007: 9.4 mm/s, Zone D."  # in the report, so a failed trial can be read


def test_wrong_tool_wrong_argument_missing_fact_and_ungrounded_number_each_fail() -> None:
    wrong_tool = score_trial(
        DETAILS, Transcript(item_id="d7", trial=0, result=turn("9.4 zone D", ("assets-get_system_summary", {}, "ok")))
    )
    assert not wrong_tool.tool_selection and not wrong_tool.passed
    wrong_arg = score_trial(
        DETAILS,
        Transcript(
            item_id="d7", trial=0, result=turn("9.4 zone D", ("assets-get_pump_details", {"pump_id": "PUMP-004"}, "ok"))
        ),
    )
    assert wrong_arg.tool_selection and wrong_arg.arguments is False and not wrong_arg.passed
    missing = score_trial(
        DETAILS,
        Transcript(
            item_id="d7", trial=0, result=turn("It is bad.", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"))
        ),
    )
    assert missing.fact_recall == 0.0 and not missing.passed
    ungrounded = score_trial(
        DETAILS,
        Transcript(
            item_id="d7",
            trial=0,
            result=turn(
                "9.4 zone D, 12.5 soon", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"), ungrounded=["12.5"]
            ),
        ),
    )
    assert not ungrounded.grounded and not ungrounded.passed
    assert "unverified numbers or ids (found in no tool result): ['12.5']" in ungrounded.problems
    vouching = turn("9.4 zone D, all fine", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"))
    vouching.overlooked_alarms = ["ALM-0001 (critical on PUMP-007)"]
    overlooked = score_trial(DETAILS, Transcript(item_id="d7", trial=0, result=vouching))
    assert not overlooked.grounded and not overlooked.passed
    assert (
        "the answer says all is well, but the tool results show active alarms: ['ALM-0001 (critical on PUMP-007)']"
    ) in overlooked.problems
    misread = turn("9.4 zone D, ALM-0001 is low", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"))
    misread.misstated_severities = ["ALM-0001 is critical, not low"]
    misstated = score_trial(DETAILS, Transcript(item_id="d7", trial=0, result=misread))
    assert not misstated.grounded and not misstated.passed
    assert "severities the tool results contradict: ['ALM-0001 is critical, not low']" in misstated.problems
    swapped = turn("9.4 zone D, PUMP-007 at 7.8", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"))
    swapped.misattributed_numbers = ["7.8 for PUMP-007 (the results give it for PUMP-004)"]
    misattributed = score_trial(DETAILS, Transcript(item_id="d7", trial=0, result=swapped))
    assert not misattributed.grounded and not misattributed.passed
    assert "numbers told of the wrong pump: ['7.8 for PUMP-007 (the results give it for PUMP-004)']" in (
        misattributed.problems
    )
    reversed_ = turn("81 °C, above its 85 °C threshold", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"))
    reversed_.misstated_comparisons = ["81 is not above 85"]
    miscompared = score_trial(DETAILS, Transcript(item_id="d7", trial=0, result=reversed_))
    assert not miscompared.grounded and not miscompared.passed
    assert "comparisons the numbers contradict: ['81 is not above 85']" in miscompared.problems


def test_an_allowed_extra_call_is_fine_but_an_unexpected_one_is_not() -> None:
    allowed = turn(
        "9.4 zone D", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"), ("alarms-list_alarms", {}, "ok")
    )
    assert score_trial(DETAILS, Transcript(item_id="d7", trial=0, result=allowed)).passed
    extra = turn(
        "9.4 zone D",
        ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"),
        ("docs-search_documentation", {}, "ok"),
    )
    assert not score_trial(DETAILS, Transcript(item_id="d7", trial=0, result=extra)).tool_selection


def test_a_filter_the_question_did_not_ask_for_fails_the_arguments() -> None:
    # "Are there any open work orders?" answered for PUMP-007 only once passed: the scorer checked listed keys only.
    item = GoldenItem.model_validate(
        {
            "id": "wo-open",
            "category": "single_tool",
            "question": "Are there any open work orders?",
            "calls": [
                {"name": ["work_orders-list_work_orders"], "arguments": {"status": "open"}, "absent": ["pump_id"]}
            ],
        }
    )
    narrowed = turn("None.", ("work_orders-list_work_orders", {"status": "open", "pump_id": "PUMP-007"}, "ok"))
    assert score_trial(item, Transcript(item_id="wo-open", trial=0, result=narrowed)).arguments is False
    plain = turn("None.", ("work_orders-list_work_orders", {"status": "open"}, "ok"))
    assert score_trial(item, Transcript(item_id="wo-open", trial=0, result=plain)).passed
    with pytest.raises(ValueError, match="both expected and absent"):
        GoldenItem.model_validate(
            {**item.model_dump(), "calls": [{"name": ["a-b"], "arguments": {"x": 1}, "absent": ["x"]}]}
        )


def test_small_talk_must_call_no_tool() -> None:
    assert score_trial(SMALL_TALK, Transcript(item_id="hi", trial=0, result=turn("Hello!"))).irrelevance is True
    called = score_trial(
        SMALL_TALK, Transcript(item_id="hi", trial=0, result=turn("Hi", ("assets-get_system_summary", {}, "ok")))
    )
    assert called.irrelevance is False and not called.passed


def test_a_write_must_end_pending_approval() -> None:
    pending = turn(
        "Parked for approval.",
        ("work_orders-create_work_order", {"pump_id": "PUMP-007", "priority": "urgent"}, "pending_approval"),
    )
    assert score_trial(WRITE, Transcript(item_id="wo", trial=0, result=pending)).passed
    denied = turn("Denied.", ("work_orders-create_work_order", {"pump_id": "PUMP-007", "priority": "high"}, "denied"))
    assert score_trial(WRITE, Transcript(item_id="wo", trial=0, result=denied)).arguments is False


def test_a_parked_call_s_approval_id_is_a_fact_its_answer_must_give() -> None:
    call = ("work_orders-create_work_order", {"pump_id": "PUMP-007", "priority": "urgent"}, "pending_approval")
    parked = turn("Parked for approval.", call)
    parked.tool_calls[0].approval_id = "APR-1A2B3C4D"  # as the runner records it
    score = score_trial(WRITE, Transcript(item_id="wo", trial=0, result=parked))
    assert not score.passed and score.fact_recall == 0.0 and "APR-1A2B3C4D" in score.problems[0]
    parked.answer = "Waiting for a supervisor's approval as APR-1A2B3C4D; nothing has been done yet."
    score = score_trial(WRITE, Transcript(item_id="wo", trial=0, result=parked))
    assert score.passed and score.fact_recall == 1.0


def test_a_failed_turn_scores_as_a_failure_with_its_error() -> None:
    score = score_trial(DETAILS, Transcript(item_id="d7", trial=0, error="model down"))
    assert not score.passed and "model down" in score.problems[0]


def test_pass_k_needs_every_trial_to_pass_while_pass_1_averages() -> None:
    good = turn("9.4 zone D", ("assets-get_pump_details", {"pump_id": "PUMP-007"}, "ok"))
    bad = turn("no idea")
    transcripts = [
        Transcript(item_id="d7", trial=0, seed=1, result=good, latency_s=2.0),
        Transcript(item_id="d7", trial=1, seed=2, result=bad, latency_s=4.0),
        Transcript(item_id="hi", trial=0, seed=1, result=turn("Hello!", model_calls=1), latency_s=1.0),
        Transcript(item_id="hi", trial=1, seed=2, result=turn("Hi!", model_calls=1), latency_s=1.0),
    ]
    report = score_report([DETAILS, SMALL_TALK], transcripts, k=2, provider="local", temperature=0.7, seeds=[1, 2])
    by = {c.category: c for c in report.categories}
    assert by["single_tool"].pass_1 == 0.5 and by["single_tool"].pass_k == 0.0
    assert by["single_tool"].latency_median_s == 3.0 and by["single_tool"].tool_selection == 0.5
    assert (
        by["irrelevance"].pass_k == 1.0
        and by["irrelevance"].irrelevance == 1.0
        and by["irrelevance"].model_calls == 1.0
    )
    assert by["overall"].items == 2 and by["overall"].pass_k == 0.5
    assert json.loads(report.model_dump_json())["k"] == 2


def test_the_packaged_question_set_loads_validates_and_covers_every_category() -> None:
    items = load_questions()
    assert len(items) >= 40
    counts = {c: sum(1 for i in items if i.category == c) for c in Category}
    assert all(n >= 3 for n in counts.values()), counts


async def test_every_tool_the_questions_name_exists(settings: Settings) -> None:
    async with open_app(settings) as app:
        names = {m.fully_qualified_name for m in app.kernel.get_full_list_of_function_metadata()}
    load_questions(tool_names=names)
    with pytest.raises(EvalQuestionsError, match="unknown tools"):
        load_questions(tool_names=names - {"assets-get_pump_details"})


def test_an_invalid_question_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "items": [{"id": "x", "category": "irrelevance", "question": "hi", "calls": [{"name": ["a-b"]}]}],
            }
        )
    )
    with pytest.raises(EvalQuestionsError, match="expects no tool call"):
        load_questions(path)
    path.write_text(json.dumps({"version": 1, "items": [{"id": "x", "category": "irrelevance", "question": "hi"}] * 2}))
    with pytest.raises(EvalQuestionsError, match="Duplicate"):
        load_questions(path)


def test_the_throwaway_settings_keep_the_base_folder_and_fix_the_database(settings: Settings, tmp_path: Path) -> None:
    clone = throwaway_settings(settings, tmp_path / "q.db", ChatProvider.LOCAL, 0.7)
    assert clone.database_path == tmp_path / "q.db" and clone.base_dir == settings.base_dir
    assert clone.chat.provider == ChatProvider.LOCAL and clone.ollama.temperature == 0.7
    assert settings.database_path != clone.database_path


def test_a_call_status_that_is_not_an_outcome_is_refused(tmp_path: Path) -> None:
    # An argument written one level too high ({"name": ..., "status": "offline"}) once passed validation
    # and failed every trial that called the tool correctly.
    path = tmp_path / "q.json"
    item = {
        "id": "x",
        "category": "single_tool",
        "question": "Offline?",
        "calls": [{"name": ["a-b"], "status": "offline"}],
    }
    path.write_text(json.dumps({"version": 1, "items": [item]}))
    with pytest.raises(EvalQuestionsError, match="pending_approval"):
        load_questions(path)


def test_a_date_counted_from_today_matches_every_way_of_writing_it(tmp_path: Path) -> None:
    # The sample fleet ends at the current hour, so a projected crossing date moves with the day of the run.
    path = tmp_path / "q.json"
    item = {"id": "t", "category": "single_tool", "question": "Worse?", "calls": [{"name": ["a-b"]}]}
    item["facts"] = [["{today+16..17}", "16 days"], "PUMP-007"]
    path.write_text(json.dumps({"version": 1, "items": [item]}))
    (loaded,) = load_questions(path, today=date(2026, 12, 3))
    assert loaded.facts == [
        ["2026-12-19", "19 December", "December 19", "2026-12-20", "20 December", "December 20", "16 days"],
        "PUMP-007",
    ]
    trend = next(i for i in load_questions(today=date(2027, 1, 30)) if i.id == "single-trend-007-temp")
    assert "2027-02-15" in trend.facts[0]


async def test_a_run_warms_up_once_unscored_then_times_only_warm_turns(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase

    from chat.local.service import LocalChatCompletion
    from evaluation import runner
    from tests.fakes.llama import ScriptedEngine

    engine = ScriptedEngine(["no_tool", "Hello! Ask me about pumps.", "no_tool", "Good morning."])

    async def local(*_: Any) -> ChatProvider:
        return ChatProvider.LOCAL

    def service(*_: Any) -> ChatCompletionClientBase:
        return LocalChatCompletion(engine)

    measured: list[int] = []

    def rates(path: Path, threads: int) -> tuple[float, float]:
        assert path == settings.resolve(settings.local_model.path) and threads == settings.local_model.threads
        measured.append(len(engine.requests))  # when: how many model calls had run by then
        return (80.0, 12.0) if len(measured) == 1 else (60.0, 9.5)

    monkeypatch.setattr(runner, "resolve_provider", local)
    monkeypatch.setattr(runner, "local_service", service)
    monkeypatch.setattr(runner, "measure_rates", rates)
    item = GoldenItem.model_validate({"id": "gm", "category": "irrelevance", "question": "Good morning!"})
    done = await runner.run_eval(settings, [item], k=1, temperature=0.7)
    assert done.provider == ChatProvider.LOCAL and done.warmup_s is not None and done.warmup_s >= 0
    assert "Hello." in engine.requests[0]["prompt"] and "Good morning!" in engine.requests[2]["prompt"]
    [transcript] = done.transcripts
    assert transcript.result is not None and transcript.result.answer == "Good morning."
    assert measured == [2, 4]  # after the warm-up's two calls, and after the trial's
    assert [(r.when, r.prompt_tokens_per_s, r.written_tokens_per_s) for r in done.machine_rates] == [
        ("before", 80.0, 12.0),
        ("after", 60.0, 9.5),
    ]
    report = score_report([item], done.transcripts, k=1, warmup_s=done.warmup_s, machine_rates=done.machine_rates)
    assert report.warmup_s == done.warmup_s and report.categories[0].irrelevance == 1.0
    assert report.model_dump(mode="json")["machine_rates"][1] == {
        "when": "after",
        "prompt_tokens_per_s": 60.0,
        "written_tokens_per_s": 9.5,
    }
    buffer = StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    print_report(CliState(settings_path=None, console=console, err_console=console), report)
    assert "llama.cpp on this machine (before → after the trials): reads 80 → 60 prompt tokens/s, " in buffer.getvalue()
    assert "writes 12.0 → 9.5 tokens/s" in buffer.getvalue()


def test_categories_and_ids_add_up_and_the_limit_spares_named_ids() -> None:
    items = load_questions()
    docs = [i.id for i in items if i.category == Category.DOCS]
    chosen = select_questions(items, [Category.DOCS], ["single-summary"])
    assert [i.id for i in chosen] == ["single-summary", *docs]  # set order, both filters
    assert [i.id for i in select_questions(items, ids=["irrelevant-2", "single-summary"])] == [
        "single-summary",
        "irrelevant-2",
    ]
    limited = select_questions(items, [Category.DOCS, Category.WRITE], ["docs-seal-leak"], limit=1)
    assert [i.id for i in limited] == [docs[0], "docs-seal-leak", "write-work-order-007"]
    # A named id does not use up its category's limit.
    assert [i.id for i in select_questions(items, [Category.DOCS], [docs[0]], limit=1)] == docs[:2]
    everything = select_questions(items, limit=1)
    assert len(everything) == len(Category) and len({i.category for i in everything}) == len(Category)
    assert select_questions(items) == items


def test_an_unknown_question_id_is_refused_with_the_close_ones() -> None:
    items = load_questions()
    with pytest.raises(EvalQuestionsError, match=r"'single-sumary' \(did you mean 'single-summary'\?\)"):
        select_questions(items, [Category.DOCS], ["single-sumary"])


def test_the_eval_command_refuses_an_unknown_id_before_any_model_runs(tmp_path: Path) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Database": {"Path": "t.db"}, "Qdrant": {"Path": ":memory:"}}))
    result = CliRunner().invoke(cli_app, ["--settings", str(settings), "eval", "--id", "nope-1", "--k", "1"])
    assert result.exit_code == 2 and "Unknown question id: 'nope-1'" in result.output
    assert "Traceback" not in result.output
    empty = tmp_path / "q.json"
    empty.write_text(json.dumps({"version": 1, "items": [json.loads(SMALL_TALK.model_dump_json())]}))
    result = CliRunner().invoke(
        cli_app, ["--settings", str(settings), "eval", "--questions", str(empty), "--category", "docs"]
    )
    assert result.exit_code == 2 and "the set has no docs question (its categories: irrelevance)" in result.output
