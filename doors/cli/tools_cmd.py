"""`pumpops tools`: list the functions the model sees, and call one directly through the kernel."""

from __future__ import annotations

import json

import typer

from doors.cli.common import ASSERTED_HELP, caller, print_json, run, state
from doors.cli.safe_text import safe_text
from governance.identity import acting_as
from kernel_setup.app import open_app
from kernel_setup.direct_calls import call_tool, tool_definitions

app = typer.Typer(help="List and call kernel functions without a model.", no_args_is_help=True)


@app.command("list")
def list_tools(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print the exact tool schemas as JSON.")
) -> None:
    """List every kernel function with the schema exactly as the model receives it.

    Example: pumpops tools list --json
    """
    cli = state(ctx)

    async def work() -> list[dict[str, object]]:
        async with open_app(cli.settings()) as app:
            return tool_definitions(app.kernel)

    definitions = run(cli, work())
    if as_json:
        print_json(cli, definitions)
        return
    for definition in definitions:
        function = definition["function"]
        assert isinstance(function, dict)
        params = function["parameters"]["properties"]
        required = set(function["parameters"]["required"])
        signature = ", ".join(f"{name}{'' if name in required else '?'}" for name in params)
        cli.console.print(f"[bold cyan]{safe_text(function['name'])}[/]({safe_text(signature)})", highlight=False)
        cli.console.print(f"  {safe_text(function['description'])}", highlight=False)


@app.command("call")
def call(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Function as plugin.function or plugin-function, e.g. assets.list_pumps."),
    arguments: list[str] = typer.Argument(None, help="Arguments as key=value, e.g. pump_id=PUMP-007."),
    as_json: bool = typer.Option(False, "--json", help="Print only the result JSON."),
    asserted: str | None = typer.Option(None, "--as", help=ASSERTED_HELP),
) -> None:
    """Call one function through the kernel (every filter applies) and print its JSON result.

    Example: pumpops tools call assets.get_pump_details pump_id=PUMP-007
    """
    cli = state(ctx)
    who = caller(cli, "cli", asserted)

    async def work() -> str:
        async with open_app(cli.settings()) as app:
            with acting_as(who):
                return await call_tool(app.kernel, name, arguments or [], app.audit)

    result = run(cli, work())
    try:
        parsed = json.loads(result)
    except json.JSONDecodeError:
        cli.console.print(safe_text(result, multiline=True), highlight=False)
        return
    print_json(cli, parsed)
