"""`pumpops triage --watch` runs automatic triage until SIGTERM; `--list` shows the records newest first."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from io import StringIO
from pathlib import Path

import typer
from rich.console import Console
from typer.testing import CliRunner

from doors.auto_triage import AutoTriage, TriageLog
from doors.cli.common import CliState
from doors.cli.main import root
from doors.cli.triage_cmd import triage_command, watch_alarms
from kernel_setup import open_app
from tests.doors.test_auto_triage import ANSWER, SAMPLE_ALARMS, add_alarm, settings_for
from tests.fakes.ollama import ScriptedOllama, reply


def cli_app() -> typer.Typer:
    app = typer.Typer(callback=root)
    app.command("triage")(triage_command)
    return app


class Notes(StringIO):
    """A console file the test can wait on: `wait_for` returns once the text was written."""

    def __init__(self) -> None:
        super().__init__()
        self._waiters: list[tuple[str, asyncio.Event]] = []

    def write(self, text: str) -> int:
        written = super().write(text)
        for wanted, event in self._waiters:
            if wanted in self.getvalue():
                event.set()
        return written

    async def wait_for(self, wanted: str) -> None:
        event = asyncio.Event()
        self._waiters.append((wanted, event))
        if wanted in self.getvalue():
            event.set()
        await event.wait()


async def test_watch_triages_new_alarms_until_sigterm(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, {"PollSeconds": 0.01, "File": "triage.jsonl"})
    async with open_app(settings) as app:
        assert len(await TriageLog(app.db).baseline()) == SAMPLE_ALARMS  # an earlier run recorded the history
        await add_alarm(app, "ALM-0100")
    notes = Notes()
    cli = CliState(
        settings_path=None,
        console=Console(file=StringIO(), width=200, color_system=None),
        err_console=Console(file=notes, width=200, color_system=None),
        _settings=settings,
    )
    fake = ScriptedOllama([reply(ANSWER), reply(ANSWER)])
    watching = asyncio.create_task(watch_alarms(cli, transport=fake.transport()))
    async with asyncio.timeout(30):
        await notes.wait_for("ALM-0100 triaged")
        os.kill(os.getpid(), signal.SIGTERM)  # the watch's own handler turns it into a clean stop
        await watching
    lines = notes.getvalue().splitlines()
    assert lines[0] == "watching for new alarms · at most 6 triages a minute · sinks: file · Ctrl-C stops"
    assert lines[1:] == ["ALM-0100 triaged · urgency within 24 h", "stopped watching"]
    assert json.loads((tmp_path / "triage.jsonl").read_text())["alarm_id"] == "ALM-0100"


async def test_list_shows_the_records_newest_first_and_as_json(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    fake = ScriptedOllama([reply(ANSWER), reply(ANSWER)])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        triage = AutoTriage(app, settings.triage)
        await triage.run_once()
        await add_alarm(app, "ALM-0100")
        await triage.run_once()
    path = str(tmp_path / "appsettings.json")
    shown = await asyncio.to_thread(CliRunner().invoke, cli_app(), ["--settings", path, "triage", "--list"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert len(lines) == 8 and " ALM-0100 triaged · urgency within 24 h" in lines[0]
    assert all("skipped · existed before automatic triage started" in line for line in lines[1:])
    as_json = await asyncio.to_thread(
        CliRunner().invoke, cli_app(), ["--settings", path, "triage", "--list", "--json", "--limit", "2"]
    )
    data = json.loads(as_json.output)
    assert [r["alarm_id"] for r in data][:1] == ["ALM-0100"] and len(data) == 2
    assert data[0]["result"]["answer"] == ANSWER and data[0]["status"] == "triaged"


def test_triage_needs_exactly_one_of_an_alarm_watch_or_list(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    path = str(tmp_path / "appsettings.json")
    assert settings.triage.file is None
    for arguments in (["triage"], ["triage", "ALM-0001", "--list"], ["triage", "--watch", "--list"]):
        result = CliRunner().invoke(cli_app(), ["--settings", path, *arguments])
        assert result.exit_code == 2
        assert "give one of: an alarm id (pumpops triage ALM-0001), --watch, or --list" in result.output
