"""`pumpops chat`: an interactive chat that shows every tool call as it happens.

The prompt loop is synchronous (reading a line blocks nothing else) and each step runs on one
long-lived `asyncio.Runner`, so the app (database, index, model client) stays open across turns.
A turn runs as a task that Ctrl-C cancels; Ctrl-C twice at the prompt, Ctrl-D or /quit exits.
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import AsyncExitStack
from typing import Protocol, TextIO

import httpx
import typer
from rich.console import Console

from core.errors import PumpOpsError
from doors.cli.chat_session import ChatSession
from doors.cli.common import ASSERTED_HELP, CliState, caller, error_code, state
from doors.cli.safe_text import safe_text
from governance.identity import CallContext
from kernel_setup.app import open_app
from kernel_setup.settings import Settings
from turn.factory import check_model

PROMPT = "you> "
EXIT_INTERRUPTED = 130


class LineReader(Protocol):
    """Where the chat's input lines come from."""

    def read_line(self, prompt: str) -> str | None:
        """The next line without its newline, or None at end of input; Ctrl-C raises KeyboardInterrupt."""
        ...


class TerminalReader:
    """An interactive terminal: `input()` with readline's line editing and history where available."""

    def __init__(self) -> None:
        try:
            import readline  # noqa: F401  (imported for its side effect on input())
        except ImportError:  # pragma: no cover - Windows without pyreadline
            pass

    def read_line(self, prompt: str) -> str | None:
        """Prompt and read one line."""
        try:
            return input(prompt)
        except EOFError:
            return None


class StreamReader:
    """Lines from a stream (piped stdin, a script, a test); each is echoed after the prompt."""

    def __init__(self, stream: TextIO, echo: Console | None = None) -> None:
        self._stream = stream
        self._echo = echo

    def read_line(self, prompt: str) -> str | None:
        """Read one line; echo it so a transcript shows what was asked."""
        line = self._stream.readline()
        if not line:
            return None
        line = line.rstrip("\r\n")
        if self._echo is not None:
            self._echo.print(f"[bold]{safe_text(prompt)}[/]{safe_text(line)}", highlight=False)
        return line


def chat_command(
    ctx: typer.Context,
    session: str | None = typer.Option(None, "--session", help="Continue this session (its id is printed)."),
    asserted: str | None = typer.Option(None, "--as", help=ASSERTED_HELP),
) -> None:
    """Chat with the assistant; tool calls show as they run. /help lists the commands.

    Ctrl-C cancels the running turn; Ctrl-C twice at the prompt, Ctrl-D or /quit exits.
    Example: pumpops chat
    """
    cli = state(ctx)
    who = caller(cli, "chat", asserted)  # a refused name exits 2 before the model is needed
    reader: LineReader = TerminalReader() if sys.stdin.isatty() else StreamReader(sys.stdin, cli.console)
    code = run_chat(cli, reader, session=session, principal=who)
    if code:
        raise typer.Exit(code)


def run_chat(
    cli: CliState,
    reader: LineReader,
    *,
    session: str | None = None,
    principal: CallContext,
    transport: httpx.AsyncBaseTransport | None = None,
) -> int:
    """Run a whole chat and return the exit code: 0; 3 when no chat model can answer; 2 when it could not start.

    ``transport`` replaces the HTTP transport to Ollama (tests pass a scripted fake).
    """
    settings = cli.settings()
    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        try:
            chat = runner.run(_open(stack, settings, cli, principal, session, transport))
        except (PumpOpsError, KeyboardInterrupt) as exc:
            runner.run(stack.aclose())
            if isinstance(exc, KeyboardInterrupt):
                return EXIT_INTERRUPTED
            cli.err_console.print(f"[bold red]error:[/] {safe_text(str(exc))}", highlight=False)
            return error_code(exc)
        try:
            _prompt_loop(runner, chat, reader)
        finally:
            runner.run(stack.aclose())
        if chat.turns:
            chat.console.print(
                f"[dim]continue with: pumpops chat --session {safe_text(chat.session)}[/]", highlight=False
            )
        return 0


async def _open(
    stack: AsyncExitStack,
    settings: Settings,
    cli: CliState,
    principal: CallContext,
    session: str | None,
    transport: httpx.AsyncBaseTransport | None,
) -> ChatSession:
    app = await stack.enter_async_context(open_app(settings, chat_transport=transport))
    model = await check_model(app)
    chat = ChatSession(app, cli.console, principal=principal, session=session, model=model)
    await chat.start()
    return chat


def _prompt_loop(runner: asyncio.Runner, chat: ChatSession, reader: LineReader) -> None:
    interrupted = False
    while True:
        try:
            line = reader.read_line(PROMPT)
        except KeyboardInterrupt:
            chat.console.print()
            if interrupted:
                return
            interrupted = True
            chat.console.print("[dim](Ctrl-C again, Ctrl-D or /quit exits)[/]", highlight=False)
            continue
        if line is None:
            chat.console.print()
            return
        interrupted = False
        try:
            if not runner.run(chat.handle(line)):
                return
        except KeyboardInterrupt:
            # Only where the turn could not own SIGINT: asyncio.Runner cancelled the whole step.
            chat.console.print("\n[yellow]⏹ cancelled[/]", highlight=False)
