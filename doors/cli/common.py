"""What every CLI command shares: settings from the global option, running async work, clean errors."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from chat.factory import ModelUnavailableError
from core.errors import PumpOpsError
from doors.cli.safe_text import safe_json, safe_text
from governance import PrincipalError
from governance.identity import CallContext
from kernel_setup.local_identity import local_caller
from kernel_setup.settings import Settings
from kernel_setup.settings_loading import load_settings

T = TypeVar("T")

EXIT_USAGE = 2
EXIT_NO_MODEL = 3
"""No chat model can answer (no Ollama reachable with the model, no usable offline model): `make run` offers the
offline model's install on this code, and only on it."""


@dataclass
class CliState:
    """Per-invocation state carried on the typer context (never module-level)."""

    settings_path: str | None
    console: Console
    err_console: Console
    _settings: Settings | None = None

    def settings(self) -> Settings:
        """Load settings once per invocation; a bad file or value exits with its message."""
        if self._settings is None:
            try:
                self._settings = load_settings(self.settings_path)
            except PumpOpsError as exc:
                fail(self, str(exc), multiline=True)  # one problem a line; the text is the user's own settings
        return self._settings


def state(ctx: typer.Context) -> CliState:
    """The CLI state set by the root callback."""
    obj = ctx.find_root().obj
    if not isinstance(obj, CliState):  # pragma: no cover - the root callback always sets it
        raise RuntimeError("CLI state missing")
    return obj


def fail(cli: CliState, message: str, code: int = EXIT_USAGE, *, multiline: bool = False) -> NoReturn:
    """Print an error (no traceback) and exit non-zero; ``multiline`` keeps the message's own line breaks."""
    shown = safe_text(message, multiline=multiline)
    cli.err_console.print(f"[bold red]error:[/] {shown}", highlight=False, markup=True)
    raise typer.Exit(code)


def error_code(exc: PumpOpsError) -> int:
    """The exit code for a PumpOps error: `EXIT_NO_MODEL` when no chat model can answer, else `EXIT_USAGE`."""
    return EXIT_NO_MODEL if isinstance(exc, ModelUnavailableError) else EXIT_USAGE


def run(cli: CliState, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run async work; PumpOps errors become a clean message and a non-zero exit (`error_code`)."""
    try:
        return asyncio.run(coroutine)
    except PumpOpsError as exc:
        fail(cli, str(exc), error_code(exc))


def print_json(cli: CliState, data: Any) -> None:
    """Machine-readable output: plain JSON on stdout, nothing else (hidden characters escaped, see `safe_json`)."""
    cli.console.out(safe_json(data), highlight=False)


ASSERTED_HELP = (
    "A name to record beside your OS user as an asserted label, e.g. --as alice; accepted only when "
    "Identity.AllowAssertedNames is true. The OS user stays the principal: a label never grants a role."
)
"""The help text of every local door's ``--as`` option."""


def caller(cli: CliState, door: str, asserted: str | None = None, option: str = "--as") -> CallContext:
    """Who asks at a local door: the OS user with its roles (`local_caller`), ``asserted`` as a label if allowed.

    A refused name (invalid, or a typed name while `Identity.AllowAssertedNames` is false) exits 2 saying why.
    """
    try:
        return local_caller(cli.settings(), door, asserted=asserted, option=option)
    except PrincipalError as exc:
        fail(cli, str(exc))
