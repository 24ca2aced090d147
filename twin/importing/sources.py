"""Finding a plant's files in a folder and reading them as raw rows, each with its line number, as they stream.

One file per record kind, named after the kind: ``pumps.csv`` or ``pumps.jsonl``, and so on. CSV files have a
header row; JSON Lines files hold one object per line (blank lines are ignored). A file is read row by row as its
rows are iterated, never held whole in memory.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, TextIO

from twin.importing.errors import PlantImportError

MAX_FILE_BYTES = 512 * 1024 * 1024
FORMATS = (".csv", ".jsonl")
READ_CHUNK_BYTES = 1024 * 1024

# One record as read: the line it starts on, and its fields (strings from CSV, JSON values from JSON Lines) or, for
# a line that cannot be a record at all (not JSON, not an object, extra CSV fields, unknown keys), why not.
# A CSV record is its fields in the header's order (`RowSource.header`), read as a dict only where needed.
RawRow = tuple[int, dict[str, Any] | list[str] | str]


@dataclass(frozen=True)
class RowSource:
    """A file's rows as they stream, and the CSV header its list rows follow (None for JSON Lines)."""

    header: tuple[str, ...] | None
    rows: Iterator[RawRow]

    def fields(self, record: dict[str, Any] | list[str]) -> dict[str, Any]:
        """A record's fields by column name."""
        return dict(zip(self.header or (), record, strict=True)) if isinstance(record, list) else record

    def close(self) -> None:
        """Close the file, done or not."""
        close = getattr(self.rows, "close", None)
        if close is not None:
            close()


class RecordKind(str, Enum):
    """The kinds of record a plant import reads, in the order they are written (each refers to earlier ones)."""

    PUMPS = "pumps"
    SENSORS = "sensors"
    READINGS = "readings"
    ALARMS = "alarms"
    MAINTENANCE = "maintenance"
    WORK_ORDERS = "work_orders"


def plant_files(folder: Path) -> dict[RecordKind, Path]:
    """The plant's files in ``folder``, by kind, in import order.

    Raises:
        PlantImportError: the folder is missing, holds no plant file, or holds both formats of one kind.
    """
    if not folder.is_dir():
        raise PlantImportError(f"No folder {str(folder)!r}: give the folder holding pumps.csv, sensors.csv, ….")
    found: dict[RecordKind, Path] = {}
    for kind in RecordKind:
        paths = [folder / f"{kind.value}{suffix}" for suffix in FORMATS if (folder / f"{kind.value}{suffix}").is_file()]
        if len(paths) > 1:
            raise PlantImportError(
                f"{folder / kind.value}: both {kind.value}.csv and {kind.value}.jsonl are present; keep one."
            )
        if paths:
            found[kind] = paths[0]
    if not found:
        names = ", ".join(f"{kind.value}.csv" for kind in RecordKind)
        raise PlantImportError(f"No plant files in {str(folder)!r}: expected one or more of {names} (or .jsonl).")
    return found


def count_lines(path: Path) -> int:
    """The file's lines that hold something, less a CSV header: the rows to expect, for a progress bar (blocking).

    A quoted CSV field spanning lines makes it an overestimate.
    """
    lines = blank = 0
    last = b"\n"
    try:
        with path.open("rb") as handle:
            while block := handle.read(READ_CHUNK_BYTES):
                lines += block.count(b"\n")
                blank += block.count(b"\n\n") + (block[:1] == b"\n" and last == b"\n")
                last = block[-1:]
    except OSError as exc:
        raise PlantImportError(f"{path}: cannot be read ({exc.strerror}).") from exc
    lines += last != b"\n"
    return max(0, lines - blank - (path.suffix == ".csv"))


def read_rows(path: Path, columns: tuple[str, ...]) -> RowSource:
    """The records of a CSV or JSON Lines file, read as they are iterated (blocking: iterate through a thread).

    The file is opened and a CSV header checked before this returns; the file is closed when the iterator is
    exhausted or closed.

    Raises:
        PlantImportError: the file cannot be read, is not UTF-8, is too big, or its CSV header is wrong (text
            further on that is not UTF-8 raises it from the iterator).
    """
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise PlantImportError(f"{path}: over {MAX_FILE_BYTES // (1024 * 1024)} MB; split it.")
        handle = path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise PlantImportError(f"{path}: cannot be read ({exc.strerror}).") from exc
    try:
        header: list[str] = []
        rows = _csv_rows(path, handle, columns, header) if path.suffix == ".csv" else _jsonl_rows(handle, columns)
        first = _decoded(path, lambda: next(rows, None))  # reads (and checks) a CSV header now
    except BaseException:
        handle.close()
        raise
    return RowSource(tuple(header) if path.suffix == ".csv" else None, _closing(path, handle, first, rows))


def _decoded(path: Path, step: Any) -> Any:
    try:
        return step()
    except UnicodeDecodeError as exc:
        raise PlantImportError(f"{path}: not UTF-8 text ({exc.reason}).") from exc
    except OSError as exc:
        raise PlantImportError(f"{path}: cannot be read ({exc.strerror}).") from exc


def _closing(path: Path, handle: TextIO, first: RawRow | None, rows: Iterator[RawRow]) -> Iterator[RawRow]:
    """``first``, then ``rows``; the file closed at the end, text that is not UTF-8 raised as a refusal of the file."""
    try:
        if first is not None:
            yield first
            yield from rows
    except UnicodeDecodeError as exc:
        raise PlantImportError(f"{path}: not UTF-8 text ({exc.reason}).") from exc
    except OSError as exc:
        raise PlantImportError(f"{path}: cannot be read ({exc.strerror}).") from exc
    finally:
        handle.close()


def _csv_rows(path: Path, handle: TextIO, columns: tuple[str, ...], header: list[str]) -> Iterator[RawRow]:
    """The records as lists in the order of ``header``, which is filled in from the file's first line."""
    reader = csv.reader(handle)
    try:
        header.extend(name.strip() for name in next(reader, []))
    except csv.Error as exc:
        raise PlantImportError(f"{path}:1: {exc}.") from exc
    unknown = [name for name in header if name not in columns]
    if not header or unknown:
        what = f"unknown column(s) {', '.join(map(repr, unknown))}" if unknown else "no header row"
        raise PlantImportError(f"{path}:1: {what}; the columns are {', '.join(columns)}.")
    width = len(header)
    extra = f"more fields than the header's {width} columns"
    previous = reader.line_num
    try:
        for record in reader:
            line = reader.line_num
            if line != previous + 1:
                # line_num is the record's last line; a quoted field may span lines (blank lines are skipped).
                line -= sum(value.count("\n") for value in record)
            previous = reader.line_num
            if len(record) == width:
                yield line, record
            elif len(record) > width:
                yield line, extra
            elif record:  # a short row: its missing fields are empty
                yield line, record + [""] * (width - len(record))
    except csv.Error as exc:
        raise PlantImportError(f"{path}:{reader.line_num}: {exc}.") from exc


def _jsonl_rows(handle: TextIO, columns: tuple[str, ...]) -> Iterator[RawRow]:
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, f"not JSON ({exc.msg} at column {exc.colno})"
            continue
        if not isinstance(value, dict):
            yield number, f"not a JSON object: {value!r}"[:200]
            continue
        unknown = [name for name in value if name not in columns]
        if unknown:
            yield number, f"unknown field(s) {', '.join(map(repr, unknown))}; the fields are {', '.join(columns)}"
            continue
        yield number, value
