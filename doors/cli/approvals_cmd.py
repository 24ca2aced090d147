"""`pumpops approvals`: the supervisor's commands to list, approve and reject parked actions.

The decider is the OS user running the command (`kernel_setup.local_identity.local_caller`), with the roles
`Identity.Roles` gives it; deciding needs the supervisor role. ``--by NAME`` is only an asserted label
recorded beside the OS user (when `Identity.AllowAssertedNames` is true): it never changes who decides.
"""

from __future__ import annotations

import json

import typer

from doors.cli.common import CliState, caller, print_json, run, state
from doors.cli.safe_text import safe_text
from governance import DEFAULT_PAGE, MAX_PAGE, Approval, ApprovalDecision, ApprovalPage
from kernel_setup.app import open_app

app = typer.Typer(help="Review parked actions: list, approve (runs it once), reject.", no_args_is_help=True)

DOOR = "approvals"
BY_HELP = (
    "An asserted label recorded beside your OS user, e.g. --by 'J. Supervisor' on a shared account (needs "
    "Identity.AllowAssertedNames). It never changes who decides: the OS user running this command, which needs "
    "the supervisor role (Identity.Roles)."
)

JSON_FIELDS = {
    "id",
    "function",
    "arguments",
    "status",
    "requested_by",
    "requested_at",
    "expires_at",
    "decided_by",
    "decided_at",
    "reason",
    "result",
    "preconditions",
    "refused_at",
}
"""The documented fields of an approval in JSON output (README "### The approval").

``preconditions``: the state the action assumed when it was parked (``[{"subject": "ALM-0003", "expects": "is
active and not acknowledged"}]``), re-checked when it runs; ``refused_at``: when that re-check refused it (status
``refused``, the reason in ``reason``)."""


def _json(approval: Approval) -> dict[str, object]:
    return approval.model_dump(mode="json", include=JSON_FIELDS | {"outcome", "message"})


def _show(cli: CliState, approvals: list[Approval]) -> None:
    """Each approval as a block; every stored value goes through `safe_text`, so it prints exactly as stored."""
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
        for p in a.preconditions:
            cli.console.print(f"    assumes: {safe_text(p.subject)} {safe_text(p.expects)}", highlight=False)
        if a.reason:
            refused = f" (refused at {safe_text(a.refused_at)})" if a.refused_at else ""
            cli.console.print(f"    reason{refused}: {safe_text(a.reason)}", highlight=False)
        if a.result is not None:
            cli.console.print(f"    result: {safe_text(json.dumps(a.result, ensure_ascii=False))}", highlight=False)


@app.command("list")
def list_approvals(
    ctx: typer.Context,
    status: str = typer.Option(
        "all", "--status", help="pending, approved, executed, rejected, expired, refused, or all (the default)."
    ),
    limit: int = typer.Option(DEFAULT_PAGE, "--limit", min=1, max=MAX_PAGE, help="How many to show (one page)."),
    offset: int = typer.Option(0, "--offset", min=0, help="How many of the newest to skip (the next page)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """List parked actions, newest first, one page at a time, with how many match in all.

    Example: pumpops approvals list --status pending --limit 50 --offset 50
    """
    cli = state(ctx)

    async def work() -> ApprovalPage:
        async with open_app(cli.settings()) as context:
            return await context.approvals.list(status, limit=limit, offset=offset)

    page = run(cli, work())
    if as_json:
        print_json(
            cli,
            {
                "total": page.total,
                "offset": page.offset,
                "limit": page.limit,
                "approvals": [_json(a) for a in page.approvals],
            },
        )
        return
    kind = "" if status.strip().lower() == "all" else f"{status.strip().lower()} "
    if not page.total:
        cli.console.print(f"No {safe_text(kind)}approvals.", highlight=False)
        return
    _show(cli, page.approvals)
    more = "" if page.next_offset is None else f"; the next page: --offset {page.next_offset}"
    cli.console.print(f"{page.describe()} {safe_text(kind)}approvals{more}", highlight=False)


@app.command("approve")
def approve(
    ctx: typer.Context,
    approval_id: str = typer.Argument(..., help="The approval id, e.g. APR-1A2B3C4D."),
    by: str | None = typer.Option(None, "--by", help=BY_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Approve a parked action and execute it exactly once; approving it again returns the first result.

    You decide as the OS user running this command: it needs the supervisor role and may not be the requester.
    Example: pumpops approvals approve APR-1A2B3C4D
    """
    cli = state(ctx)
    who = caller(cli, DOOR, by, option="--by")

    async def work() -> ApprovalDecision:
        async with open_app(cli.settings()) as context:
            return await context.approvals.approve(approval_id, who)

    decision = run(cli, work())
    if as_json:
        print_json(cli, [_json(decision)])
        return
    cli.console.print(safe_text(decision.message), highlight=False)
    _show(cli, [decision])


@app.command("reject")
def reject(
    ctx: typer.Context,
    approval_id: str = typer.Argument(..., help="The approval id, e.g. APR-1A2B3C4D."),
    by: str | None = typer.Option(None, "--by", help=BY_HELP),
    reason: str = typer.Option(..., "--reason", help="Why (recorded, shown to the operator)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Reject a pending action; it will never run. You decide as the OS user, which needs the supervisor role.

    Example: pumpops approvals reject APR-1A2B3C4D --reason "duplicate of WO-0003"
    """
    cli = state(ctx)
    who = caller(cli, DOOR, by, option="--by")

    async def work() -> Approval:
        async with open_app(cli.settings()) as context:
            return await context.approvals.reject(approval_id, who, reason)

    rejected = run(cli, work())
    if as_json:
        print_json(cli, [_json(rejected)])
    else:
        _show(cli, [rejected])
