"""`pumpops audit`: read the newest audit rows and verify the hash chain.

Reading the trail needs the auditor or supervisor role, held by the OS user running the command
(`Identity.Roles`); a refusal exits 2 saying how to get the role, and is itself audited.
"""

from __future__ import annotations

import json

import typer

from core.errors import sentence
from doors.cli.common import CliState, caller, fail, print_json, run, state
from doors.cli.safe_text import safe_text
from governance.access import require_role
from governance.audit_log import AuditLog, AuditOutcome, AuditRow, ChainReport
from governance.errors import RoleError
from governance.identity import CallContext
from governance.roles import Role
from storage import Database, open_database

app = typer.Typer(help="Read and verify the hash-chained audit trail.", no_args_is_help=True)

EXIT_BROKEN_CHAIN = 1


@app.command("tail")
def tail(
    ctx: typer.Context,
    lines: int = typer.Option(20, "-n", "--lines", min=1, max=100_000, help="How many of the newest rows to show."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for machines."),
) -> None:
    """Show the newest audit rows, oldest first: who called which function, how it ended and how long it took.

    Example: pumpops audit tail -n 50 --json
    """
    cli = state(ctx)
    _require_reader(cli, "tail")

    async def work() -> list[AuditRow]:
        db = await _open(cli)
        try:
            return await AuditLog(db).tail(lines)
        finally:
            await db.close()

    rows = run(cli, work())
    if as_json:
        print_json(cli, [row.model_dump(mode="json") for row in rows])
        return
    if not rows:
        cli.console.print("The audit trail is empty.")
        return
    for row in rows:
        who = row.principal if row.session is None else f"{row.principal}/{row.session}"
        took = "-" if row.duration_ms is None else f"{row.duration_ms:.1f} ms"
        arguments = row.arguments if isinstance(row.arguments, str) else json.dumps(row.arguments, ensure_ascii=False)
        line = f"#{row.id} {row.at} {who} via {row.door}: {row.function} {arguments} -> {row.outcome.value} ({took})"
        if row.detail:
            line += f" {row.detail}"
        cli.console.print(safe_text(line), highlight=False, soft_wrap=True)


@app.command("verify")
def verify(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON for machines.")) -> None:
    """Recompute every row's hash and link; exit 1 naming the first bad row when the chain is broken.

    Example: pumpops audit verify
    """
    cli = state(ctx)
    _require_reader(cli, "verify")

    async def work() -> ChainReport:
        db = await _open(cli)
        try:
            return await AuditLog(db).check_chain()
        finally:
            await db.close()

    report = run(cli, work())
    if as_json:
        print_json(cli, {"ok": report.ok, **report.model_dump(mode="json")})
    elif report.ok:
        cli.console.print(
            f"Audit chain intact: {report.rows_checked} rows; head hash {safe_text(report.head_hash or '(empty)')}.",
            highlight=False,
            soft_wrap=True,
        )
    else:
        cli.err_console.print(
            f"Audit chain broken at row {safe_text(report.first_bad_id)}: {safe_text(sentence(report.reason or ''))} "
            f"Rows verified before it: {report.rows_checked}.",
            highlight=False,
            soft_wrap=True,
        )
    if not report.ok:
        raise typer.Exit(EXIT_BROKEN_CHAIN)


def _require_reader(cli: CliState, command: str) -> None:
    """Refuse (exit 2, the refusal audited when a database exists) unless the OS user may read the audit trail."""
    who = caller(cli, "cli")
    try:
        require_role(who, "read the audit trail", Role.AUDITOR, Role.SUPERVISOR)
    except RoleError as exc:
        settings = cli.settings()
        if settings.database.url is not None or settings.database_path.is_file():
            run(cli, _record_refusal(cli, who, f"audit-{command}", str(exc)))
        fail(cli, str(exc))


async def _record_refusal(cli: CliState, who: CallContext, function: str, reason: str) -> None:
    db = await open_database(cli.settings().database_target)
    try:
        await AuditLog(db).record(function=function, arguments={}, outcome=AuditOutcome.DENIED, call=who, detail=reason)
    finally:
        await db.close()


async def _open(cli: CliState) -> Database:
    settings = cli.settings()
    path = settings.database_path
    if settings.database.url is None and not path.is_file():
        fail(cli, f"No database at {str(path)!r}. Run `pumpops db init` first, or pass --settings.")
    return await open_database(settings.database_target)
