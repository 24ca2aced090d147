"""`pumpops chat` driven by scripted input against the scripted fake Ollama: golden transcripts."""

import asyncio
import json
import re
import signal
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from chat.factory import ModelUnavailableError
from core.errors import PumpOpsError
from doors.cli.ask_cmd import ask, print_footer
from doors.cli.chat_cmd import StreamReader, chat_command, run_chat
from doors.cli.chat_render import TurnRenderer
from doors.cli.common import EXIT_NO_MODEL, EXIT_USAGE, CliState, error_code
from doors.cli.main import root
from governance.identity import CallContext
from governance.roles import Role
from kernel_setup import load_settings
from tests.callers import person
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.postgres_server import database_section
from turn.events import TurnResult


def write_settings(folder: Path, target: str | Path | None, **sections: Any) -> Path:
    """Settings for the test's `database_target` (``None``: a plain SQLite file, for a test that never opens it)."""
    path = folder / "appsettings.json"
    database = database_section(target, "chat.db") if target is not None else {"Path": "chat.db"}
    path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, **sections}))
    return path


def make_cli(settings_file: Path) -> tuple[CliState, StringIO]:
    buffer = StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    cli = CliState(settings_path=str(settings_file), console=console, err_console=console)
    cli._settings = load_settings(settings_file, env={})
    return cli, buffer


class ScriptReader:
    """Scripted input; a callable line is computed when read (e.g. from what the chat printed)."""

    def __init__(self, lines: list[str | Callable[[], str]], echo: Console) -> None:
        self._lines = list(lines)
        self._echo = echo

    def read_line(self, prompt: str) -> str | None:
        if not self._lines:
            return None
        line = self._lines.pop(0)
        text = line() if callable(line) else line
        self._echo.print(f"{prompt}{text}", markup=False, highlight=False)
        return text


def normalized(output: str) -> str:
    """Durations and session ids vary from run to run."""
    output = re.sub(r"\(\d+ ms\)", "(N ms)", output)
    output = re.sub(r"\b[0-9a-f]{12}\b", "<session>", output)
    output = re.sub(
        r"^database (?:SQLite|PostgreSQL) .*?(?=\nsession <session>)", "database <database>", output, flags=re.S | re.M
    )
    return "\n".join(line.rstrip() for line in output.splitlines())


ALICE = person("alice", Role.OPERATOR, door="chat")
BOB = person("bob", Role.SUPERVISOR, door="chat")


def chat(
    settings_file: Path, fake: ScriptedOllama, lines: list[str], principal: CallContext = ALICE
) -> tuple[int, str]:
    cli, buffer = make_cli(settings_file)
    reader = StreamReader(StringIO("".join(f"{line}\n" for line in lines)), cli.console)
    code = run_chat(cli, reader, principal=principal, transport=fake.transport())
    return code, buffer.getvalue()


GOLDEN = """\
PumpOps chat · model qwen2.5:7b-instruct at http://127.0.0.1:11434
database <database>
session <session> (new) · as alice · /help for commands · Ctrl-C cancels a turn · /quit or Ctrl-D
exits
you> Which pump needs attention?
… assets-get_system_summary()
✓ assets-get_system_summary() → total_pumps=8 (N ms)
pumpops> PUMP-007 needs attention: it is in ISO 10816-3 zone D.
session <session> · 2 model calls · 240+60 tokens
you> /tools"""


def test_a_question_shows_the_tool_call_then_streams_the_answer_and_tools_lists_the_functions(
    tmp_path: Path, database_target: str | Path
) -> None:
    fake = ScriptedOllama(
        [
            reply(tool_calls=[call("assets-get_system_summary")]),
            [reply("PUMP-007 needs attention: ", done=False), reply("it is in ISO 10816-3 zone D.")],
        ]
    )
    settings = write_settings(tmp_path, database_target)
    code, output = chat(settings, fake, ["Which pump needs attention?", "/tools", "/quit"])
    assert code == 0
    # The greeting names the database in use: the SQLite file, or the PostgreSQL server and database.
    shown = load_settings(settings, env={}).database_description
    assert shown.startswith("PostgreSQL " if isinstance(database_target, str) else "SQLite ")
    assert "".join(f"database {shown}".split()) in "".join(output.split())  # a long path wraps
    text = normalized(output)
    assert text.startswith(GOLDEN), text
    tools = text[len(GOLDEN) :]
    assert re.search(r"^\d+ tools$", tools, re.MULTILINE)
    for name in ("assets-get_pump_details(pump_id)", "alarms-list_alarms(severity?, pump_id?, active_only?)"):
        assert f"  {name}" in tools
    assert "you> /quit" in text
    assert text.endswith("continue with: pumpops chat --session <session>")
    assert [m["role"] for m in fake.requests[1]["messages"]] == ["system", "user", "assistant", "tool"]


def test_a_degraded_turn_is_flagged_and_its_unverified_number_never_shown(
    tmp_path: Path, database_target: str | Path
) -> None:
    fake = ScriptedOllama(
        [
            reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-007")]),
            reply("PUMP-007 is at 12.7 mm/s."),
            reply("PUMP-007 is at 12.7 mm/s, as I said."),
        ]
    )
    settings = write_settings(tmp_path, database_target, Agent={"MaxModelCalls": 2})
    code, output = chat(settings, fake, ["How is PUMP-007?"])
    assert code == 0
    text = normalized(output)
    assert '✓ assets-get_pump_details(pump_id="PUMP-007") → pump_id=PUMP-007, status=online (N ms)' in text
    assert "12.7" not in text.split("✎")[0]  # the failing answer was never shown
    assert "pumpops> The model's answer did not match this turn's tool results" in text
    assert "⚠ degraded: model call limit of 2 reached; the last call had no tools" in text


def test_an_all_clear_over_active_alarms_is_replaced_and_the_chat_notes_the_correction(
    tmp_path: Path, database_target: str | Path
) -> None:
    vouching = reply("All pumps are running normally.")
    fake = ScriptedOllama([vouching, dict(vouching)])  # the turn read the summary first (a status question)
    code, output = chat(write_settings(tmp_path, database_target), fake, ["Are we OK?"])
    assert code == 0
    text = " ".join(normalized(output).split())  # the note wraps at the terminal's width
    assert "running normally" not in text.split("✎")[0]  # the failing answer was never shown
    assert "pumpops> The model's answer did not match this turn's tool results" in text
    assert "Active alarms, most severe first: 1 critical active alarm (fleet summary)" in text
    assert (
        "✎ answer replaced: it failed its checks twice; shown instead is what the tool results say "
        "(1 critical active alarm (fleet summary); 1 high active alarm (fleet summary))"
    ) in text


def test_refused_and_failed_tool_calls_carry_their_mark(tmp_path: Path, database_target: str | Path) -> None:
    fake = ScriptedOllama(
        [
            reply(tool_calls=[call("assets-get_pump_status", pump_id="PUMP-007")]),
            reply("I could not check."),
        ]
    )
    _, output = chat(write_settings(tmp_path, database_target), fake, ["Status of 7?"])
    assert "✗ rejected assets-get_pump_status(pump_id=\"PUMP-007\") → Unknown tool 'assets-get_pump_status'" in output


def test_slash_commands_show_history_reset_help_and_refuse_unknown_ones(
    tmp_path: Path, database_target: str | Path
) -> None:
    fake = ScriptedOllama(
        [reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-004")]), reply("PUMP-004 is in zone C.")]
    )
    lines = ["How is PUMP-004?", "/history", "/reset", "/history", "/help", "/frobnicate", "", "/approve", "/quit"]
    code, output = chat(write_settings(tmp_path, database_target), fake, lines)
    text = normalized(output)
    assert code == 0
    assert "session <session> · 4 messages\nyou> How is PUMP-004?\n" in text
    assert '  → assets-get_pump_details(pump_id="PUMP-004")\n  ← assets-get_pump_details: ' in text
    assert "pumpops> PUMP-004 is in zone C." in text
    assert "new session <session> (continue the previous one with: pumpops chat --session <session>)" in text
    assert "session <session> has no messages yet" in text
    assert "/reject ID REASON" in text and "Ctrl-C cancels a running turn" in text
    assert "unknown command /frobnicate; /help lists the commands" in text
    assert "usage: /approve ID" in text


def test_an_unavailable_model_says_what_to_do_and_exits_non_zero(tmp_path: Path, database_target: str | Path) -> None:
    fake = ScriptedOllama([], models=["llama3:8b"])
    code, output = chat(write_settings(tmp_path, database_target, Chat={"Provider": "ollama"}), fake, ["hello"])
    assert code == EXIT_NO_MODEL == 3  # `make run` offers the offline model on this code only
    assert "error: Ollama at http://127.0.0.1:11434 has no model 'qwen2.5:7b-instruct'" in output
    assert "ollama pull qwen2.5:7b-instruct" in output and "Traceback" not in output
    assert fake.requests == []


def test_the_chat_command_reports_an_unreachable_ollama_without_a_traceback(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, database_target, Ollama={"Host": "http://127.0.0.1:9"})
    app = typer.Typer(callback=root)
    app.command("chat")(chat_command)
    result = CliRunner().invoke(app, ["--settings", str(settings), "chat"], input="hi\n/quit\n")
    assert result.exit_code == EXIT_NO_MODEL
    assert "Cannot reach Ollama at http://127.0.0.1:9" in result.output and "ollama serve" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_ask_without_a_chat_model_exits_with_the_no_model_code_and_other_errors_with_the_usage_code(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(
        tmp_path, database_target, Ollama={"Host": "http://127.0.0.1:9"}, Chat={"Provider": "ollama"}
    )
    app = typer.Typer(callback=root)
    app.command("ask")(ask)
    result = CliRunner().invoke(app, ["--settings", str(settings), "ask", "Which pumps are offline?"])
    assert result.exit_code == EXIT_NO_MODEL
    assert "Cannot reach Ollama at http://127.0.0.1:9" in result.output and "Traceback" not in result.output
    assert error_code(ModelUnavailableError("no model")) == EXIT_NO_MODEL
    assert error_code(PumpOpsError("bad input")) == EXIT_USAGE != EXIT_NO_MODEL


@pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler, reason="needs the default SIGINT handler"
)
def test_ctrl_c_cancels_the_running_turn_and_the_chat_goes_on(tmp_path: Path, database_target: str | Path) -> None:
    fake = ScriptedOllama([reply("Still here.")])
    scripted = fake.transport()
    asked: list[str] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/chat" and not asked:
            asked.append("interrupted")
            signal.raise_signal(signal.SIGINT)  # the operator presses Ctrl-C while the model is thinking
            await asyncio.sleep(30)
            return httpx.Response(500, text="the turn was not cancelled")
        return await scripted.handle_async_request(request)

    cli, buffer = make_cli(write_settings(tmp_path, database_target))
    reader = StreamReader(StringIO("Which pump?\nAre you there?\n/history\n"), cli.console)
    code = run_chat(cli, reader, principal=ALICE, transport=httpx.MockTransport(handle))
    text = normalized(buffer.getvalue())
    assert code == 0
    assert "you> Which pump?\n⏹ turn cancelled (nothing was saved to the session)\nyou> Are you there?" in text
    assert "pumpops> Still here." in text
    assert "session <session> · 2 messages\nyou> Are you there?" in text
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_approvals_self_approval_is_refused_with_the_supervisor_command_and_another_engineer_approves(
    tmp_path: Path, database_target: str | Path
) -> None:
    """The approval flow through the slash commands (needs `app.approvals` and the work-orders plugin)."""
    settings = write_settings(tmp_path, database_target)
    cli, buffer = make_cli(settings)
    _require_approvals(cli)
    fake = ScriptedOllama(
        [
            reply(
                tool_calls=[
                    call(
                        "work_orders-create_work_order",
                        pump_id="PUMP-007",
                        priority="urgent",
                        summary="Inspect DE bearing; 9.4 mm/s zone D",
                    )
                ]
            ),
            reply("The work order is parked for approval."),
        ]
    )

    def approval_id() -> str:
        found = re.search(r"→ pending approval (\S+)", buffer.getvalue())
        assert found, buffer.getvalue()
        return found.group(1)

    lines: list[str | Callable[[], str]] = [
        "Open an urgent work order for PUMP-007",
        "/approvals",
        lambda: f"/approve {approval_id()}",
        "/quit",
    ]
    alice = person("alice", Role.OPERATOR, Role.SUPERVISOR, door="chat")  # a supervisor, and the requester
    assert run_chat(cli, ScriptReader(lines, cli.console), principal=alice, transport=fake.transport()) == 0
    first = normalized(buffer.getvalue())
    apr = approval_id()
    assert '⏸ pending approval work_orders-create_work_order(pump_id="PUMP-007", priority="urgent"' in first
    assert "parked for a human: /approvals lists it" in first
    assert f"{apr} pending work_orders-create_work_order(" in first and "requested by alice" in first
    assert f"you> /approve {apr}\nrefused: " in first
    assert (
        "AllowSelfApproval" in first
        and f"other than the requester approves it with `pumpops approvals approve {apr}`" in " ".join(first.split())
    )

    bob, bob_buffer = make_cli(settings)
    lines = ["/approvals all", f"/reject {apr}", f"/approve {apr}", "/approvals"]
    assert (
        run_chat(
            bob,
            ScriptReader(lines, bob.console),
            principal=person("bob", Role.SUPERVISOR, door="chat"),
            transport=fake.transport(),
        )
        == 0
    )
    second = normalized(bob_buffer.getvalue())
    assert "usage: /reject ID REASON" in second
    assert f"executed {apr} work_orders-create_work_order(" in second and "(by bob)" in second
    assert "  result: " in second
    assert "no pending approvals" in second


def _require_approvals(cli: CliState) -> None:
    from kernel_setup.app import open_app

    async def probe() -> bool:
        async with open_app(cli.settings(), load_sample=False) as app:
            names = {m.fully_qualified_name for m in app.kernel.get_full_list_of_function_metadata()}
            return getattr(app, "approvals", None) is not None and "work_orders-create_work_order" in names

    if not asyncio.run(probe()):
        pytest.skip("the approvals service (app.approvals) or the work-orders plugin is not installed yet")


def test_ask_prints_unverified_ids_and_overlooked_alarms_under_the_answer(tmp_path: Path) -> None:
    cli, buffer = make_cli(write_settings(tmp_path, None))
    result = TurnResult(
        answer="Everything is fine; ALM-0006 is low.",
        ungrounded=["ALM-0006"],
        misattributed_numbers=["7.8 for PUMP-007 (the results give it for PUMP-004)"],
        overlooked_alarms=["ALM-0001 (critical on PUMP-007)"],
        misstated_severities=["ALM-0002 is high, not low"],
        misstated_comparisons=["81 is not above 85"],
        session="s",
    )
    print_footer(cli, result)
    text = " ".join(buffer.getvalue().split())
    assert "⚠ unverified numbers or ids (found in no tool result): ALM-0006" in text
    assert (
        "the answer says all is well, but the tool results show active alarms: ALM-0001 (critical on PUMP-007)" in text
    )
    assert "severities the tool results contradict: ALM-0002 is high, not low" in text
    assert "⚠ comparisons the numbers contradict: 81 is not above 85" in text
    assert "⚠ numbers told of the wrong pump: 7.8 for PUMP-007 (the results give it for PUMP-004)" in text


def test_ask_and_chat_print_the_same_flags_under_a_degraded_empty_answer(tmp_path: Path) -> None:
    cli, buffer = make_cli(write_settings(tmp_path, None))
    result = TurnResult(answer=" ", degraded=True, reason="deadline of 5 s reached [/]", session="s")
    print_footer(cli, result)
    asked = " ".join(buffer.getvalue().split())
    out = StringIO()
    TurnRenderer(Console(file=out, width=200), Console(file=out, width=200)).finish(result)
    chatted = " ".join(out.getvalue().split())
    for text in (asked, chatted):
        assert "⚠ degraded: deadline of 5 s reached [/]" in text  # the reason is escaped, not read as markup
        assert "⚠ no answer within the turn's bounds" in text
        assert "session s · 0 model calls · 0+0 tokens" in text


def test_ask_notes_each_kind_of_correction_under_the_answer_and_prints_them_in_json(tmp_path: Path) -> None:
    from turn.events import Correction

    cli, buffer = make_cli(write_settings(tmp_path, None))
    result = TurnResult(
        answer="No action was carried out in this turn.",
        corrections=[Correction(check="unbacked_actions", finding="'I have approved it.': nothing", action="replaced")],
        session="s",
    )
    print_footer(cli, result)
    text = " ".join(buffer.getvalue().split())
    assert "✎ answer replaced: it failed its checks twice" in text and "'I have approved it.': nothing" in text
    dumped = json.loads(result.model_dump_json())["corrections"]
    assert dumped == [{"check": "unbacked_actions", "finding": "'I have approved it.': nothing", "action": "replaced"}]


def test_hostile_text_from_data_the_model_and_the_session_id_is_shown_as_stored_in_the_chat(
    tmp_path: Path, database_target: str | Path
) -> None:
    summary = "[/] [red]the[/red] \x1b[2K\u202eok"
    fake = ScriptedOllama(
        [
            reply(
                tool_calls=[call("work_orders-create_work_order", pump_id="PUMP-007", priority="low", summary=summary)]
            ),
            reply("Parked [red]the[/red] order [/]\x1b[2K\u202edone.\nSecond line."),
        ]
    )
    settings = write_settings(tmp_path, database_target, Agent={"ParkedAnswer": False})  # the model words it
    cli, buffer = make_cli(settings)
    reader = StreamReader(StringIO("Grease it\n/approvals\n/history\n"), cli.console)
    code = run_chat(cli, reader, principal=ALICE, session="s[/]\x1b[2K", transport=fake.transport())
    output = buffer.getvalue()
    assert code == 0, output
    assert not any(char in output for char in "\x1b\u202e")
    assert "session s[/]\\x1b[2K (new)" in output
    assert "pumpops> Parked [red]the[/red] order [/]\\x1b[2K\\u202edone.\nSecond line." in output
    flat = " ".join(output.split())  # lines wrap at the console's width
    assert flat.count('summary="[/] [red]the[/red] \\u001b[2K\\u202eok")') == 4  # tool lines, /approvals, /history
    assert "showing 1-1 of 1 pending approvals" in flat and "session s[/]\\x1b[2K · 2 model calls" in flat


def test_a_chat_as_a_name_with_hidden_characters_is_refused_before_the_model_is_asked(tmp_path: Path) -> None:
    settings = write_settings(tmp_path, None, Ollama={"Host": "http://127.0.0.1:9"}, Chat={"Provider": "ollama"})
    app = typer.Typer(callback=root)
    app.command("chat")(chat_command)
    result = CliRunner().invoke(app, ["--settings", str(settings), "chat", "--as", "mallory\x1b[2Kbob"], input="hi\n")
    assert result.exit_code == EXIT_USAGE == 2
    assert "mallory\\x1b[2Kbob" in result.output and "\x1b" not in result.output
    assert "Cannot reach Ollama" not in result.output
    hidden = CliRunner().invoke(app, ["--settings", str(settings), "chat", "--as", "\u202ealice"], input="hi\n")
    assert hidden.exit_code == EXIT_USAGE and "\\u202ealice" in hidden.output and "\u202e" not in hidden.output


def test_a_structured_answer_notes_only_what_it_left_out_or_could_not_use() -> None:
    from doors.cli.chat_render import correction_notes
    from turn.events import Correction, TurnResult

    def notes(*corrections: tuple[str, str]) -> list[str]:
        made = [Correction(check="structured_answer", finding=f, action=a) for a, f in corrections]
        return correction_notes(TurnResult(answer="x", corrections=made, session="s"))

    assert notes(("written", "cited E1")) == []
    assert notes(("written", "cited E1"), ("dropped", "E9 is no record of this turn's results")) == [
        "structured answer: left out of the model's reply (E9 is no record of this turn's results)"
    ]
    assert notes(("kept_text", "no structured reply came")) == [
        "structured answer: the model's reply could not be used, so its own answer is shown (no structured reply came)"
    ]
