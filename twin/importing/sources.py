"""Finding a plant's files in a folder and reading them as raw rows, each with its line number.

One file per record kind, named after the kind: ``pumps.csv`` or ``pumps.jsonl``, and so on. CSV files have a
header row; JSON Lines files hold one object per line (blank lines are ignored).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from twin.importing.errors import PlantImportError

MAX_FILE_BYTES = 512 * 1024 * 1024
FORMATS = (".csv", ".jsonl")


class RecordKind(str, Enum):
    """The kinds of record a plant import reads, in the order they are written (each refers to earlier ones)."""

    PUMPS = "pumps"
    SENSORS = "sensors"
    READINGS = "readings"
    ALARMS = "alarms"
    MAINTENANCE = "maintenance"
    WORK_ORDERS = "work_orders"


@dataclass(frozen=True)
class RawRow:
    """One record as read: the line it starts on and its fields (strings from CSV, JSON values from JSON Lines)."""

    line: int
    fields: dict[str, Any]


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


def read_rows(path: Path, columns: tuple[str, ...]) -> list[RawRow]:
    """Every record of a CSV or JSON Lines file (blocking: call through a thread).

    Raises:
        PlantImportError: the file cannot be read, is not UTF-8, is too big, or its CSV header is wrong.
    """
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise PlantImportError(f"{path}: over {MAX_FILE_BYTES // (1024 * 1024)} MB; split it.")
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PlantImportError(f"{path}: not UTF-8 text ({exc.reason}).") from exc
    except OSError as exc:
        raise PlantImportError(f"{path}: cannot be read ({exc.strerror}).") from exc
    if path.suffix == ".csv":
        return _csv_rows(path, text, columns)
    return _jsonl_rows(text)


def _csv_rows(path: Path, text: str, columns: tuple[str, ...]) -> list[RawRow]:
    reader = csv.DictReader(text.splitlines(keepends=True), restkey="\x00extra")
    header = [name.strip() for name in reader.fieldnames or []]
    unknown = [name for name in header if name not in columns]
    if not header or unknown:
        what = f"unknown column(s) {', '.join(map(repr, unknown))}" if unknown else "no header row"
        raise PlantImportError(f"{path}:1: {what}; the columns are {', '.join(columns)}.")
    reader.fieldnames = header
    rows = []
    try:
        for record in reader:
            # line_num is the record's last line; a quoted field may span lines (blank lines are skipped).
            spanned = sum(value.count("\n") for value in record.values() if isinstance(value, str))
            rows.append(RawRow(reader.line_num - spanned, dict(record)))
    except csv.Error as exc:
        raise PlantImportError(f"{path}:{reader.line_num}: {exc}.") from exc
    return rows


def _jsonl_rows(text: str) -> list[RawRow]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            value = NotJsonLine(f"not JSON ({exc.msg} at column {exc.colno})")
        rows.append(RawRow(number, value if isinstance(value, dict) else {"\x00bad": value}))
    return rows


class NotJsonLine(str):
    """The reason a JSON Lines line could not be read, carried to validation as a bad row."""

    __slots__ = ()
