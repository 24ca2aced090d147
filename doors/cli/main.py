"""The `pumpops` command: one root that mounts each command group."""

from __future__ import annotations

import logging

import typer
from rich.console import Console

from doors.cli import (
    approvals_cmd,
    ask_cmd,
    audit_cmd,
    chat_cmd,
    config_cmd,
    db_cmd,
    eval_cmd,
    ingest_cmd,
    mcp_cmd,
    model_cmd,
    simulate_cmd,
    telemetry_cmd,
    tokens_cmd,
    tools_cmd,
    triage_cmd,
)
from doors.cli.common import CliState

app = typer.Typer(
    name="pumpops",
    help="PumpOps: an operations assistant for pump stations.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(config_cmd.app, name="config")
app.add_typer(db_cmd.app, name="db")
app.add_typer(tools_cmd.app, name="tools")
app.add_typer(tokens_cmd.app, name="tokens")
app.add_typer(audit_cmd.app, name="audit")
app.add_typer(approvals_cmd.app, name="approvals")
app.add_typer(model_cmd.app, name="model")
app.add_typer(telemetry_cmd.app, name="telemetry")
app.add_typer(simulate_cmd.app, name="simulate")
app.command("ask")(ask_cmd.ask)
app.command("ingest")(ingest_cmd.ingest_command)
app.command("mcp")(mcp_cmd.mcp_command)
app.command("chat")(chat_cmd.chat_command)
app.command("triage")(triage_cmd.triage_command)
app.command("eval")(eval_cmd.eval_command)


@app.callback()
def root(
    ctx: typer.Context,
    settings: str | None = typer.Option(
        None, "--settings", help="Settings file (else $PUMPOPS_SETTINGS, else ./appsettings.json, else defaults)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log library diagnostics to stderr."),
) -> None:
    """PumpOps: ask about pumps in plain language; every number comes from a tool."""
    # Errors reach the user once, as our own message; library logs only on request.
    logging.basicConfig(
        level=logging.INFO if verbose else logging.CRITICAL, format="%(levelname)s %(name)s: %(message)s"
    )
    # emoji off: a stored ":warning:" is shown as typed (stored text is escaped by `safe_text` otherwise).
    ctx.obj = CliState(
        settings_path=settings,
        console=Console(emoji=False),
        err_console=Console(stderr=True, soft_wrap=True, emoji=False),
    )


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # python -m doors.cli.main, as the console script does
    main()
