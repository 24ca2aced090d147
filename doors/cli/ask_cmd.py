"""`pumpops ask`: one question, one turn, streamed to the terminal or returned as JSON."""

from __future__ import annotations

import json

import httpx
import typer

from doors.cli.chat_render import tool_line, turn_flags, usage_line
from doors.cli.common import ASSERTED_HELP, CliState, caller, print_json, run, state
from doors.cli.safe_text import safe_text
from governance.identity import CallContext
from kernel_setup.app import open_app
from turn.events import TextDelta, ToolCallFinished, ToolCallStarted, TurnFinished, TurnResult
from turn.factory import check_model, runner_for


def ask(
    ctx: typer.Context,
    question: str = typer.Argument(..., help="The question, in plain language."),
    session: str | None = typer.Option(None, "--session", help="Continue this session (its id is printed)."),
    as_json: bool = typer.Option(False, "--json", help="Print the turn result JSON only."),
    asserted: str | None = typer.Option(None, "--as", help=ASSERTED_HELP),
) -> None:
    """Ask one question; tools run through the kernel's filters; the answer cites tool results.

    Example: pumpops ask "Which pump needs attention?" --json
    """
    cli = state(ctx)
    who = caller(cli, "cli", asserted)
    result = run(cli, _ask(cli, question, session, who, as_json))
    if as_json:
        print_json(cli, result.model_dump(mode="json"))
    if result.degraded and not result.answer.strip():
        raise typer.Exit(4)


async def _ask(
    cli: CliState,
    question: str,
    session: str | None,
    principal: CallContext,
    as_json: bool,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> TurnResult:
    """One turn, streamed to the terminal unless ``as_json``; ``transport`` replaces Ollama's (tests: a fake)."""
    async with open_app(cli.settings(), chat_transport=transport) as app:
        await check_model(app)
        result: TurnResult | None = None
        async for event in runner_for(app).stream(question, session=session, principal=principal, door="cli"):
            if as_json:
                if isinstance(event, TurnFinished):
                    result = event.result
                continue
            if isinstance(event, ToolCallStarted):
                cli.err_console.print(
                    f"[dim]→ {safe_text(event.name)}({safe_text(json.dumps(event.arguments, ensure_ascii=False))})[/]",
                    highlight=False,
                )
            elif isinstance(event, ToolCallFinished):
                cli.err_console.print(tool_line(event.record), highlight=False)
            elif isinstance(event, TextDelta):
                cli.console.print(safe_text(event.text, multiline=True), end="", highlight=False, soft_wrap=True)
            elif isinstance(event, TurnFinished):
                result = event.result
                print_footer(cli, result)
        assert result is not None
        return result


def print_footer(cli: CliState, result: TurnResult) -> None:
    """Under the answer, on stderr: the chat's flags (`turn_flags`) and its usage line."""
    cli.console.print()
    for line in [*turn_flags(result), usage_line(result)]:
        cli.err_console.print(line, highlight=False)
