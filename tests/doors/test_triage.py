"""Alarm triage: the alarm is read first, one turn gathers its context, the urgency is parsed."""

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from doors.cli.common import CliState
from doors.cli.main import root
from doors.cli.triage_cmd import triage, triage_command
from doors.triage import AUTOMATION, TriageResult, UnknownAlarmError, Urgency, parse_urgency, triage_alarm
from kernel_setup import Settings, open_app
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.postgres_server import database_section
from turn.events import TextDelta, ToolCallFinished

ANSWER = (
    "PUMP-007 is at 9.4 mm/s, in ISO 10816-3 zone D, and ALM-0006 shows an earlier zone C alarm: a pattern. "
    "The manuals call zone D severe enough to cause damage.\nURGENCY: immediate"
)


def context_calls() -> dict[str, Any]:
    return reply(
        tool_calls=[
            call("assets-get_pump_details", pump_id="PUMP-007"),
            call("alarms-list_alarms", pump_id="PUMP-007", active_only=False),
            call("sensors-get_sensor_trend", pump_id="PUMP-007", sensor_type="vibration", days=30),
        ]
    )


async def test_triage_gathers_context_in_one_turn_and_parses_the_urgency(settings: Settings) -> None:
    fake = ScriptedOllama([context_calls(), reply(ANSWER)])
    seen: list[Any] = []
    async with open_app(settings, chat_transport=fake.transport()) as app:
        result = await triage_alarm(app, " alm-0001 ", on_event=seen.append)
        audit = await app.db.fetch_all("SELECT principal, door, function FROM audit_log ORDER BY id")
    assert result.alarm.alarm_id == "ALM-0001" and result.alarm.pump_id == "PUMP-007"
    assert result.urgency is Urgency.IMMEDIATE
    # The prompt asks for the manuals too: a model that skipped them gets the search as the turn's follow-up
    # (an empty index here, so it answers with the error that says to ingest).
    assert [(c.name, c.status) for c in result.turn.tool_calls] == [
        ("assets-get_pump_details", "ok"),
        ("alarms-list_alarms", "ok"),
        ("sensors-get_sensor_trend", "ok"),
        ("docs-search_documentation", "error"),
    ]
    assert result.turn.answer == ANSWER and result.turn.ungrounded == []
    assert any(isinstance(e, ToolCallFinished) for e in seen) and any(isinstance(e, TextDelta) for e in seen)
    prompt = fake.requests[0]["messages"][-1]["content"]
    for fragment in (
        "Triage alarm ALM-0001: critical vibration alarm on pump PUMP-007 at value 9.4",
        'assets-get_pump_details with pump_id "PUMP-007"',
        'alarms-list_alarms with pump_id "PUMP-007" and active_only false',
        'sensors-get_sensor_trend with pump_id "PUMP-007", sensor_type "vibration" and days 30',
        "docs-search_documentation",
        "exactly one of: immediate, within 24 h, next planned maintenance, no action",
        "URGENCY: <one of the choices above>",
    ):
        assert fragment in prompt
    assert "drive-end bearing housing" not in prompt  # the free-text message reaches the model only as tool data
    assert {(r["principal"], r["door"]) for r in audit} == {("automation:triage", "triage")}


async def test_an_unknown_alarm_fails_clearly_before_any_model_call(settings: Settings) -> None:
    fake = ScriptedOllama([])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        with pytest.raises(UnknownAlarmError, match=r"No alarm found with id 'ALM-9999'.*alarms.list_alarms"):
            await triage_alarm(app, "ALM-9999")
        with pytest.raises(UnknownAlarmError, match="is not an alarm id"):
            await triage_alarm(app, "   ")
    assert fake.requests == []


async def test_an_answer_without_an_urgency_line_is_unknown(settings: Settings) -> None:
    # Answered before any read, the triage prompt (naming a pump and the manuals) is read for and asked again.
    fake = ScriptedOllama([reply("I cannot tell without more data."), reply("I cannot tell without more data.")])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        result = await triage_alarm(app, "ALM-0005")
    assert result.urgency is Urgency.UNKNOWN
    assert "sensor_type" in fake.requests[0]["messages"][-1]["content"]  # flow sensor: a trend is asked for


@pytest.mark.parametrize(
    ("answer", "urgency"),
    [
        ("Evidence…\nURGENCY: within 24 h", Urgency.WITHIN_24_H),
        ("**Urgency:** Within 24 hours", Urgency.WITHIN_24_H),
        ("Urgency - next planned  maintenance.", Urgency.NEXT_PLANNED_MAINTENANCE),
        ("urgency: NO ACTION", Urgency.NO_ACTION),
        ("Urgency: immediate? No.\nURGENCY: no action", Urgency.NO_ACTION),
        ("No action is needed on the seal; act immediately on the bearing.", Urgency.UNKNOWN),
        ("URGENCY: immediately-ish", Urgency.UNKNOWN),
    ],
)
def test_the_urgency_comes_from_the_last_urgency_line(answer: str, urgency: Urgency) -> None:
    assert parse_urgency(answer) is urgency


async def test_the_command_streams_the_turn_and_json_is_the_triage_result(settings: Settings) -> None:
    buffer, notes = StringIO(), StringIO()
    cli = CliState(
        settings_path=None,
        console=Console(file=buffer, width=100, color_system=None),
        err_console=Console(file=notes, width=100, color_system=None),
        _settings=settings,
    )
    fake = ScriptedOllama([context_calls(), reply(ANSWER)])
    result = await triage(cli, "ALM-0001", as_json=False, principal=AUTOMATION, transport=fake.transport())
    assert result.urgency is Urgency.IMMEDIATE
    assert buffer.getvalue().endswith("URGENCY: immediate\nurgency: immediate\n")
    assert notes.getvalue().startswith("triage ALM-0001 · PUMP-007 · critical vibration alarm · raised ")
    assert '✓ sensors-get_sensor_trend(pump_id="PUMP-007", sensor_type="vibration", days=30)' in notes.getvalue()
    data = json.loads(result.model_dump_json())
    assert set(data) == {"alarm", "urgency", "turn"} and data["urgency"] == "immediate"
    assert data["alarm"]["alarm_id"] == "ALM-0001" and data["turn"]["answer"] == ANSWER
    assert TriageResult.model_validate(data) == result


def test_the_triage_command_rejects_an_unknown_alarm_without_a_traceback(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = tmp_path / "appsettings.json"
    database = database_section(database_target, "t.db")
    settings.write_text(
        json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, "Ollama": {"Host": "http://127.0.0.1:9"}})
    )
    app = typer.Typer(callback=root)
    app.command("triage")(triage_command)
    result = CliRunner().invoke(app, ["--settings", str(settings), "triage", "ALM-9999", "--json"])
    assert result.exit_code == 2
    assert "No alarm found with id 'ALM-9999'" in result.output and "Traceback" not in result.output
