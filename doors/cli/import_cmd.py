"""`pumpops db import`: import a plant from the files a site already has (docs/plant-import.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from core.errors import PumpOpsError
from doors.cli.common import ASSERTED_HELP, caller, print_json, run, state
from doors.cli.safe_text import safe_text
from governance.audit_log import AuditLog, AuditOutcome
from governance.effects import Effect
from governance.identity import CallContext
from storage import open_database
from twin.importing import ImportProgress, ImportReport, RecordKind, import_plant, site_zone

AUDIT_FUNCTION = "cli-import"
EXIT_ROWS_REFUSED = 1


class _BarProgress(ImportProgress):
    """One rich progress bar per file, in rows."""

    def __init__(self, bar: Progress) -> None:
        self._bar = bar
        self._task: TaskID | None = None

    def start(self, kind: RecordKind, path: Path, rows: int) -> None:
        self._task = self._bar.add_task(kind.value, total=rows)

    def advance(self, rows: int) -> None:
        if self._task is not None:
            self._bar.advance(self._task, rows)


def import_command(
    ctx: typer.Context,
    folder: Path = typer.Argument(
        ..., help="Folder holding pumps, sensors, readings, alarms and maintenance files (.csv or .jsonl)."
    ),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Import the good rows of a file and report the bad ones."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check and count everything; write nothing."),
    time_zone: str | None = typer.Option(
        None,
        "--time-zone",
        help="The site's IANA time zone for timestamps without an offset, e.g. Europe/Berlin "
        "(default: Plant.TimeZone).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON for machines."),
    asserted: str | None = typer.Option(None, "--as", help=ASSERTED_HELP),
) -> None:
    """Import a plant's records; every file is one transaction and importing it again changes nothing.

    A bad row is reported as file:line: reason and its file is not imported (nor the files after it), unless
    --skip-bad. Exits 1 when rows were refused without --skip-bad.

    Example: pumpops db import examples/plant --dry-run
    """
    cli = state(ctx)
    settings = cli.settings()
    who = caller(cli, "cli", asserted)

    async def work() -> ImportReport:
        named = time_zone or settings.plant.time_zone
        zone = site_zone(named)
        db = await open_database(settings.database_target)
        try:
            columns = (TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"))
            with Progress(*columns, TimeElapsedColumn(), console=cli.err_console, disable=as_json) as bar:
                run_import = import_plant(
                    db, folder, zone=zone, skip_bad=skip_bad, dry_run=dry_run, progress=_BarProgress(bar)
                )
                if dry_run:  # writes nothing, so records nothing
                    return await run_import
                arguments = {
                    "folder": str(folder),
                    "skip_bad": skip_bad,
                    "time_zone": named,
                }
                return await _audited(AuditLog(db), who, arguments, run_import)
        finally:
            await db.close()

    report = run(cli, work())
    if as_json:
        print_json(cli, report.to_dict())
    else:
        _print_summary(cli.console, report)
    for file_report in report.files:
        for problem in file_report.problems:
            cli.err_console.print(
                f"{safe_text(file_report.file)}:{problem.line}: {safe_text(problem.reason)}", highlight=False
            )
    if not report.complete:
        raise typer.Exit(EXIT_ROWS_REFUSED)


async def _audited(
    audit: AuditLog, call: CallContext, arguments: dict[str, object], run_import: Awaitable[ImportReport]
) -> ImportReport:
    """Run the import and record one audit row for it: ok when every file was imported, else error."""
    started = time.perf_counter()

    async def record(outcome: AuditOutcome, detail: str) -> None:
        elapsed_ms = (time.perf_counter() - started) * 1000
        await audit.record(
            function=AUDIT_FUNCTION,
            arguments=arguments,
            outcome=outcome,
            call=call,
            effect=Effect.WRITE,
            detail=detail,
            duration_ms=elapsed_ms,
        )

    try:
        report = await run_import
    except PumpOpsError as exc:
        await record(AuditOutcome.ERROR, str(exc))
        raise
    await record(AuditOutcome.OK if report.complete else AuditOutcome.ERROR, _audit_detail(report))
    return report


def _audit_detail(report: ImportReport) -> str:
    """The run's counts per kind, compact, for the audit row (whose detail is capped).

    Zero counts are left out, and ``imported`` is written only for a file that was not.
    """
    counts = {
        kind: {
            k: v
            for k, v in data.items()
            if (k in ("read", "added", "updated", "skipped", "rejected") and v) or (k == "imported" and not v)
        }
        for kind, data in report.to_dict()["kinds"].items()
    }
    return json.dumps(counts, separators=(",", ":"))


def _print_summary(console: Console, report: ImportReport) -> None:
    """One line per file, then what was (or, on a dry run, would be) done."""
    verb = "would import" if report.dry_run else "imported"
    for r in report.files:
        state_word = verb if r.imported else "NOT imported"
        console.print(
            f"{safe_text(r.file)}: {state_word}: {r.read} read, {r.added} added, {r.updated} updated, "
            f"{r.skipped} skipped (unchanged), {r.rejected} rejected",
            highlight=False,
        )
    if report.dry_run:
        console.print("Dry run: nothing was written.", highlight=False)
