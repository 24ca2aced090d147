"""`pumpops config`: show the effective settings."""

from __future__ import annotations

import json

import typer

from doors.cli.common import print_json, state

app = typer.Typer(help="Inspect settings.", no_args_is_help=True)


@app.command("show")
def show(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON for machines.")) -> None:
    """Print the effective settings (file, then environment overrides), secrets masked.

    Example: pumpops config show --json
    """
    cli = state(ctx)
    settings = cli.settings()
    data = settings.to_display()
    if as_json:
        print_json(cli, data)
        return
    cli.console.print(f"[bold]Settings[/] from {settings.source} (relative paths resolve against {settings.base_dir})")
    cli.console.print(f"Database in use: {settings.database_description}", highlight=False, markup=False)
    for section, values in data.items():
        cli.console.print(f"[cyan]{section}[/]")
        for key, value in values.items():
            cli.console.print(f"  {key} = {json.dumps(value, ensure_ascii=False)}", highlight=False, markup=False)
