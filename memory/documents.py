"""Finding and reading the files to ingest; anything unusable is reported by name, never fatal."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memory.corpus import source_name

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
MAX_BYTES = 5_000_000


@dataclass(frozen=True)
class Skipped:
    """A file not ingested and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class SourceDocument:
    """A readable text document."""

    path: Path
    source: str
    name: str
    text: str


def discover(paths: Iterable[Path]) -> tuple[list[Path], list[Skipped]]:
    """Expand folders (recursively: .md, .markdown, .txt; hidden entries ignored) and check paths exist.

    Files named explicitly are taken whatever their suffix; reading decides whether they are text.
    """
    found: list[Path] = []
    skipped: list[Skipped] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            candidates = sorted(p for p in path.rglob("*") if _wanted_in_folder(p, path))
        elif path.exists() or path.is_symlink():
            candidates = [path]
        else:
            skipped.append(Skipped(str(path), "no such file or folder"))
            continue
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return found, skipped


def _wanted_in_folder(path: Path, folder: Path) -> bool:
    hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
    return path.suffix.lower() in TEXT_SUFFIXES and not hidden


def read_document(path: Path) -> SourceDocument | Skipped:
    """Read one file as UTF-8 text (blocking; run it in a worker thread)."""
    try:
        if not path.is_file():
            return Skipped(str(path), "not a regular file")
        size = path.stat().st_size
        if size > MAX_BYTES:
            return Skipped(str(path), f"too large ({size:,} bytes; the limit is {MAX_BYTES:,})")
        data = path.read_bytes()
    except OSError as exc:
        return Skipped(str(path), f"cannot read: {exc.strerror or exc}")
    if not data.strip():
        return Skipped(str(path), "empty file")
    if b"\x00" in data:
        return Skipped(str(path), "binary file, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skipped(str(path), f"not UTF-8 text (invalid byte at offset {exc.start})")
    return SourceDocument(path=path, source=source_name(path), name=path.stem, text=text)
