"""One plant import: each file read, checked and written in its own transaction, in dependency order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import tzinfo
from itertools import islice
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import sentence
from storage import DRIVER_ERRORS, Connection, Database
from twin.importing.checking import ReadingChecker, RowChecker
from twin.importing.errors import PlantImportError
from twin.importing.records import READING_COLUMNS, SPECS, Problem, Record
from twin.importing.sources import RecordKind, RowSource, count_lines, plant_files, read_rows
from twin.importing.writing import finish, registry_pumps, registry_sensors, write

CHUNK_ROWS = 10_000


class ImportProgress:
    """What a door shows while importing: a file starts with its row count, then rows are done in batches."""

    def start(self, kind: RecordKind, path: Path, rows: int) -> None:
        """A file's rows are read and checked; ``rows`` will be written."""

    def advance(self, rows: int) -> None:
        """``rows`` more rows of the current file are written."""


@dataclass
class FileReport:
    """One file's outcome: rows read, added, updated, skipped (already present as given) and rejected."""

    kind: RecordKind
    file: str
    read: int = 0
    added: int = 0
    updated: int = 0
    skipped: int = 0
    rejected: int = 0
    imported: bool = False
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "file": self.file,
            "read": self.read,
            "added": self.added,
            "updated": self.updated,
            "skipped": self.skipped,
            "rejected": self.rejected,
            "imported": self.imported,
            "problems": [{"file": self.file, "line": p.line, "reason": p.reason} for p in self.problems],
        }


@dataclass
class ImportReport:
    """A whole import run; ``complete`` when every file was imported (bad rows skipped on request)."""

    folder: str
    dry_run: bool
    files: list[FileReport] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every file present was imported."""
        return all(report.imported for report in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data, keyed by record kind."""
        return {
            "folder": self.folder,
            "dry_run": self.dry_run,
            "complete": self.complete,
            "kinds": {report.kind.value: report.to_dict() for report in self.files},
        }


def site_zone(name: str | None) -> tzinfo | None:
    """The IANA time zone ``name`` (e.g. ``Europe/Berlin``), or None.

    Raises:
        PlantImportError: no such time zone.
    """
    if name is None or not name.strip():
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise PlantImportError(
            f"Unknown time zone {name!r}: give an IANA name such as 'Europe/Berlin' or 'UTC'."
        ) from None


class _DryRunDone(Exception):
    """Raised at the end of a dry run to roll its single transaction back."""


async def import_plant(
    db: Database,
    folder: Path,
    *,
    zone: tzinfo | None = None,
    skip_bad: bool = False,
    dry_run: bool = False,
    progress: ImportProgress | None = None,
) -> ImportReport:
    """Import the plant files in ``folder`` (see docs/plant-import.md).

    Each file is one transaction: written whole, or, when a row is bad and ``skip_bad`` is off, not at all — and
    the files after it are not read (they refer to its records). A dry run checks and writes everything in one
    transaction and rolls it back, so its counts are what a real run would do.

    Raises:
        PlantImportError: the folder holds no plant file, or a file cannot be read or has the wrong columns.
    """
    files = plant_files(folder)
    report = ImportReport(folder=str(folder), dry_run=dry_run)
    shown = progress or ImportProgress()
    async with _transactions(db, dry_run) as per_file:
        for kind, path in files.items():
            async with per_file() as conn:
                file_report = await _import_file(conn, kind, path, zone, skip_bad, shown)
            report.files.append(file_report)
            if not file_report.imported:
                break
    return report


@asynccontextmanager
async def _transactions(db: Database, dry_run: bool) -> AsyncIterator[Callable[[], Any]]:
    """Yield a factory of per-file transactions: real ones, or one shared transaction rolled back at the end."""
    if not dry_run:
        yield db.transaction
        return
    try:
        async with db.transaction() as conn:

            @asynccontextmanager
            async def shared() -> AsyncIterator[Connection]:
                yield conn

            yield shared
            raise _DryRunDone
    except _DryRunDone:
        pass


async def _import_file(
    conn: Connection,
    kind: RecordKind,
    path: Path,
    zone: tzinfo | None,
    skip_bad: bool,
    progress: ImportProgress,
) -> FileReport:
    """Read, check and write one file as it streams, chunk by chunk, inside a savepoint of the file's transaction.

    Every row is checked, so every bad one is reported; once one is found without ``skip_bad``, nothing more is
    written and what was is rolled back to the savepoint: the file is imported whole or not at all.
    """
    report = FileReport(kind=kind, file=str(path))
    checker = await _checker(conn, kind, zone)
    columns = READING_COLUMNS if kind is RecordKind.READINGS else SPECS[kind].columns
    progress.start(kind, path, await asyncio.to_thread(count_lines, path))
    rows = await asyncio.to_thread(read_rows, path, columns)
    await conn.execute("SAVEPOINT plant_file")
    try:
        await _stream(conn, kind, rows, checker, skip_bad, progress, report)
    except DRIVER_ERRORS as exc:
        await _roll_back(conn)
        raise PlantImportError(f"{path}: cannot be written, nothing of it was: {sentence(str(exc))}") from exc
    except BaseException:
        await _roll_back(conn)
        raise
    finally:
        rows.close()
    if report.imported:
        await conn.execute("RELEASE plant_file")
    else:
        await _roll_back(conn)
        report.added = report.updated = report.skipped = 0
    return report


async def _stream(
    conn: Connection,
    kind: RecordKind,
    rows: RowSource,
    checker: RowChecker | ReadingChecker,
    skip_bad: bool,
    progress: ImportProgress,
    report: FileReport,
) -> None:
    """Check each chunk in a thread while the one before it is written."""

    def next_chunk() -> tuple[int, list[Record], list[Problem]]:
        chunk = list(islice(rows.rows, CHUNK_ROWS))
        good, problems = checker.check(chunk, rows)
        return len(chunk), good, problems

    pending = asyncio.ensure_future(asyncio.to_thread(next_chunk))
    touched: set[str] = set()
    try:
        while True:
            read, good, problems = await pending
            if not read:
                break
            pending = asyncio.ensure_future(asyncio.to_thread(next_chunk))
            report.read += read
            report.rejected += len(problems)
            report.problems.extend(problems)
            if report.problems and not skip_bad:
                continue  # read on, to report every bad row; nothing more is written
            counts = await write(conn, kind, good)
            report.added += counts.added
            report.updated += counts.updated
            report.skipped += counts.skipped
            if kind is RecordKind.MAINTENANCE:
                touched.update(record[0] for record in good)
            progress.advance(read)
    finally:
        if not pending.done():
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
    if report.problems and not skip_bad:
        return
    await finish(conn, kind, checker.touched if isinstance(checker, ReadingChecker) else touched)
    report.imported = True


async def _checker(conn: Connection, kind: RecordKind, zone: tzinfo | None) -> RowChecker | ReadingChecker:
    """The file's checker, knowing the registry's pumps (or sensors) as the file starts."""
    if kind is RecordKind.READINGS:
        return ReadingChecker(zone, await registry_sensors(conn))
    return RowChecker(kind, zone, await registry_pumps(conn) if kind is not RecordKind.PUMPS else set())


async def _roll_back(conn: Connection) -> None:
    """Undo what the file wrote, keeping the transaction (and the files before it) going."""
    await conn.execute("ROLLBACK TO plant_file")
    await conn.execute("RELEASE plant_file")
