"""`pumpops approvals`: the supervisor's commands to list, approve and reject parked actions."""

from __future__ import annotations

import json

import typer

from governance import Approval
from kernel_setup.app import open_app
from kernel_setup.cli.common import CliState, print_json, run, state
from kernel_setup.cli.safe_text import safe_text

app = typer.Typer(help="Review parked actions: list, approve (runs it once), reject.", no_args_is_help=True)


def _show(cli: CliState, approvals: list[Approval], as_json: bool) -> None:
    """Each approval as a block; every stored value goes through `safe_text`, so it prints exactly as stored."""
    if as_json:
        print_json(cli, [a.model_dump(mode="json", exclude={"decided_at", "reason"}) for a in approvals])
        return
    if not approvals:
        cli.console.print("No approvals.")
    for a in approvals:
        cli.console.print(
            f"[bold]{safe_text(a.id)}[/] {a.status.value:<9} {safe_text(a.function)} "
            f"{safe_text(json.dumps(a.arguments, ensure_ascii=False))}",
            highlight=False,
        )
        decided = f"; decided by {safe_text(a.decided_by)}" if a.decided_by else ""
        cli.console.print(
            f"    requested by {safe_text(a.requested_by)} at {safe_text(a.requested_at)}; "
            f"expires {safe_text(a.expires_at)}{decided}",
            highlight=False,
        )
        if a.reason:
            cli.console.print(f"    reason: {safe_text(a.reason)}", highlight=False)
        if a.result is not None:
            cli.console.print(f"    result: {safe_text(json.dumps(a.result, ensure_ascii=False))}", highlight=False)


@app.command("list")
def list_approvals(
    ctx: typer.Context,
    status: str | None = typer.Option(None, "--status", help="pending, approved, executed, rejected or expired."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """List parked actions, newest first.

    Example: pumpops approvals list --status pending
    """
    cli = state(ctx)

    async def work() -> list[Approval]:
        async with open_app(cli.settings()) as context:
            return await context.approvals.list(status)

    _show(cli, run(cli, work()), as_json)


@app.command("approve")
def approve(
    ctx: typer.Context,
    approval_id: str = typer.Argument(..., help="The approval id, e.g. APR-1A2B3C4D."),
    by: str = typer.Option(..., "--by", help="Who approves (recorded; may not be the requester)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Approve a parked action and execute it exactly once; approving it again returns the first result.

    Example: pumpops approvals approve APR-1A2B3C4D --by "J. Supervisor"
    """
    cli = state(ctx)

    async def work() -> Approval:
        async with open_app(cli.settings()) as context:
            return await context.approvals.approve(approval_id, by)

    _show(cli, [run(cli, work())], as_json)


@app.command("reject")
def reject(
    ctx: typer.Context,
    approval_id: str = typer.Argument(..., help="The approval id, e.g. APR-1A2B3C4D."),
    by: str = typer.Option(..., "--by", help="Who rejects (recorded)."),
    reason: str = typer.Option(..., "--reason", help="Why (recorded, shown to the operator)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Reject a pending action; it will never run.

    Example: pumpops approvals reject APR-1A2B3C4D --by "J. Supervisor" --reason "duplicate of WO-0003"
    """
    cli = state(ctx)

    async def work() -> Approval:
        async with open_app(cli.settings()) as context:
            return await context.approvals.reject(approval_id, by, reason)

    _show(cli, [run(cli, work())], as_json)
