"""`pumpops ingest`: index maintenance manuals (by default the shipped corpus) into the manuals index."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from doors.cli.common import print_json, run, state
from doors.cli.safe_text import safe_text
from kernel_setup.manuals import document_index
from memory import IngestManifest, IngestReport, ingest
from storage import open_database

EXIT_NOTHING_INGESTED = 1


class _BarProgress:
    """Feeds ingest progress (in chunks) to a rich progress bar."""

    def __init__(self, bar: Progress) -> None:
        self._bar = bar
        self._task: TaskID | None = None

    def start(self, total: int) -> None:
        self._task = self._bar.add_task("chunks", total=total)

    def advance(self, chunks: int) -> None:
        if self._task is not None:
            self._bar.advance(self._task, chunks)


def ingest_command(
    ctx: typer.Context,
    paths: list[Path] | None = typer.Argument(
        None, help="Files or folders (.md, .markdown, .txt) to index; default: the shipped maintenance manuals."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON for machines."),
) -> None:
    """Chunk, embed and index manuals; re-running skips unchanged chunks and replaces edited documents' chunks.

    Files that are empty, binary, not UTF-8, unreadable or over 5 MB are reported and skipped; what is already
    indexed stays. So are symbolic links leading out of a folder being ingested (never followed), named pipes,
    devices and virtual files such as those under /proc. A file deleted from a folder being ingested is removed
    from the index with its chunks. Exits 1 when files were given but none could be ingested.

    Example: pumpops ingest docs/manuals --json
    """
    cli = state(ctx)
    settings = cli.settings()

    async def work() -> IngestReport:
        db = await open_database(settings.database_target)
        index = document_index(settings)
        try:
            columns = (TextColumn("ingesting"), BarColumn(), MofNCompleteColumn(), TextColumn("chunks"))
            with Progress(*columns, TimeElapsedColumn(), console=cli.err_console, disable=as_json) as bar:
                manifest = IngestManifest(db, index.config.collection)
                return await ingest(paths or None, index, manifest, progress=_BarProgress(bar))
        finally:
            await index.close()
            await db.close()

    report = run(cli, work())
    if as_json:
        print_json(cli, report.to_dict())
    else:
        removed = (
            f"; {report.documents_removed} document(s) no longer on disk removed from the index"
            if report.documents_removed
            else ""
        )
        cli.console.print(
            f"Ingested {report.documents} document(s): {report.chunks_added} chunk(s) added, "
            f"{report.chunks_updated} updated, {report.chunks_removed} removed in {report.seconds} s{removed}.",
            highlight=False,
        )
        for skipped in report.skipped:
            cli.err_console.print(
                f"[yellow]skipped[/] {safe_text(str(skipped.path))}: {safe_text(skipped.reason)}", highlight=False
            )
    if report.documents == 0 and report.skipped:
        raise typer.Exit(EXIT_NOTHING_INGESTED)
