"""`pumpops tokens`: static API tokens for `pumpops mcp --http`, stored hashed in ``Mcp.Auth.TokensFile``.

Creating the first token switches authentication on for the HTTP door: from then on every request needs one.
"""

from __future__ import annotations

import typer

from core.errors import PumpOpsError
from doors.cli.common import CliState, fail, print_json, state
from doors.cli.safe_text import safe_text
from governance.api_tokens import TokenFile
from governance.roles import Role

app = typer.Typer(
    help="Static API tokens for the HTTP MCP server: create (the secret is shown once), list, revoke.",
    no_args_is_help=True,
)


def _file(cli: CliState) -> TokenFile:
    settings = cli.settings()
    return TokenFile(settings.resolve(settings.mcp.auth.tokens_file))


@app.command("create")
def create_token(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Who the token stands for: the principal its requests are audited as."),
    role: list[Role] = typer.Option(
        [Role.OPERATOR], "--role", help="A role it holds (repeat for more): operator, supervisor or auditor."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the token and its entry as JSON."),
) -> None:
    """Create a token for NAME and print its secret once; only its SHA-256 is stored.

    Example: pumpops tokens create ci-bot --role operator
    """
    cli = state(ctx)
    tokens = _file(cli)
    try:
        entry, secret = tokens.create(name, role)
    except PumpOpsError as exc:
        fail(cli, str(exc))
    if as_json:
        print_json(cli, {**entry.listing(), "token": secret})
        return
    roles = ", ".join(r.value for r in entry.roles)
    cli.err_console.print(
        f"Created token {safe_text(entry.name)} ({roles}) in {tokens.path}. It is shown once; store it now. "
        "Clients send it as `Authorization: Bearer <token>`.",
        highlight=False,
    )
    cli.console.out(secret, highlight=False)


@app.command("list")
def list_tokens(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print the entries as JSON.")
) -> None:
    """List tokens: name, roles, created, revoked (never the secret)."""
    cli = state(ctx)
    tokens = _file(cli)
    try:
        entries = tokens.read()
    except PumpOpsError as exc:
        fail(cli, str(exc))
    if as_json:
        print_json(cli, [entry.listing() for entry in entries])
        return
    if not entries:
        cli.console.print(f"No tokens in {tokens.path}. Create one with `pumpops tokens create NAME --role operator`.")
        return
    for entry in entries:
        state_text = f"revoked {entry.revoked_at}" if entry.revoked_at else "active"
        cli.console.print(
            f"{safe_text(entry.name)}  {', '.join(r.value for r in entry.roles)}  created {entry.created_at}  "
            f"{state_text}",
            highlight=False,
        )


@app.command("revoke")
def revoke_token(ctx: typer.Context, name: str = typer.Argument(..., help="The token's name.")) -> None:
    """Revoke the active token NAME: requests carrying it are refused at once (the server rereads the file).

    Example: pumpops tokens revoke ci-bot
    """
    cli = state(ctx)
    try:
        entry = _file(cli).revoke(name)
    except PumpOpsError as exc:
        fail(cli, str(exc))
    cli.console.print(f"Revoked {safe_text(entry.name)} at {entry.revoked_at}.", highlight=False)
