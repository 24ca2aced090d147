"""Finding and reading the files to ingest; anything unusable is reported by name, never fatal.

What a folder holds is read only from inside that folder: a symbolic link in it that leads out of it
(``handbook.md -> /etc/passwd``) is skipped, and the file behind a link that stays inside is opened
one path component at a time without following links, so a link swapped in while ingesting cannot
lead out either. A file named on the command line is the operator's choice and is followed. Either
way only regular files are read (never a named pipe, a device or a socket), at most `MAX_BYTES` + 1
bytes of them, and a file whose content does not match its size (a virtual file such as those under
``/proc``, whose size reads as 0) is skipped.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memory.corpus import source_name

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
MAX_BYTES = 5_000_000

_NOT_REGULAR = "not a regular file"
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)  # a FIFO never blocks open
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


@dataclass(frozen=True)
class Skipped:
    """A file not ingested and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class FoundFile:
    """A file to read, and the resolved folder it must be read from inside (None: named by the operator)."""

    path: Path
    folder: Path | None = None


@dataclass(frozen=True)
class SourceDocument:
    """A readable text document."""

    path: Path
    source: str
    name: str
    text: str


@dataclass(frozen=True)
class Discovered:
    """What `discover` found: files to read, paths skipped, and the targets of links that leave their folder."""

    files: list[FoundFile]
    skipped: list[Skipped]
    outside_targets: list[Path]
    """Resolved targets of symbolic links refused for leaving their folder (chunks of one indexed before go)."""


def discover(paths: Iterable[Path]) -> Discovered:
    """Expand folders (recursively: .md, .markdown, .txt; hidden entries ignored) and check paths exist.

    Files named explicitly are taken whatever their suffix; reading decides whether they are text. A
    symbolic link inside a folder that leads out of it is skipped with its target named.
    """
    found: list[FoundFile] = []
    skipped: list[Skipped] = []
    outside: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if path.is_dir():
            folder = path.resolve()
            candidates = [FoundFile(p, folder) for p in sorted(path.rglob("*")) if _wanted_in_folder(p, path)]
        elif path.exists() or path.is_symlink():
            candidates = [FoundFile(path)]
        else:
            skipped.append(Skipped(str(path), "no such file or folder"))
            continue
        for candidate in candidates:
            key = candidate.path.resolve()
            if candidate.folder is not None and not key.is_relative_to(candidate.folder):
                skipped.append(Skipped(str(candidate.path), _outside(key)))
                outside.append(key)
                continue
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return Discovered(found, skipped, outside)


def _wanted_in_folder(path: Path, folder: Path) -> bool:
    hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
    return path.suffix.lower() in TEXT_SUFFIXES and not hidden


def _outside(target: Path) -> str:
    return (
        f"symbolic link to {str(target)!r}, outside the folder being ingested; not followed "
        "(copy the file into the folder, or name it on the command line, to ingest it)"
    )


def read_document(path: Path, folder: Path | None = None) -> SourceDocument | Skipped:
    """Read one file as UTF-8 text (blocking; run it in a worker thread).

    Args:
        path: The file.
        folder: The resolved folder ``path`` was found in: the file is read only from inside it. None
            for a file the operator named, whose symbolic links are followed.
    """
    try:
        fd = _open_regular(path, folder)
        if isinstance(fd, Skipped):
            return fd
        with os.fdopen(fd, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > MAX_BYTES:
                return Skipped(str(path), f"too large ({size:,} bytes; the limit is {MAX_BYTES:,})")
            data = file.read(MAX_BYTES + 1)  # the limit holds whatever the size claims
    except OSError as exc:
        return Skipped(str(path), f"cannot read: {exc.strerror or exc}")
    if len(data) > MAX_BYTES:
        return Skipped(str(path), f"too large (more than {MAX_BYTES:,} bytes read; the limit is {MAX_BYTES:,})")
    if len(data) != size:
        return Skipped(
            str(path),
            f"its size reads as {size:,} bytes but {len(data):,} were read: a virtual file (like those under /proc) "
            "or one being written; not ingested",
        )
    if not data.strip():
        return Skipped(str(path), "empty file")
    if b"\x00" in data:
        return Skipped(str(path), "binary file, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Skipped(str(path), f"not UTF-8 text (invalid byte at offset {exc.start})")
    return SourceDocument(path=path, source=source_name(path), name=path.stem, text=text)


def _open_regular(path: Path, folder: Path | None) -> int | Skipped:
    """An open descriptor of the regular file at ``path``, or why it is not read.

    Raises:
        OSError: the file cannot be opened (other than its being absent).
    """
    try:
        if folder is None:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                return Skipped(str(path), _special(info.st_mode))
            fd = os.open(path, _OPEN_FLAGS)
        else:
            target = path.resolve()
            if not target.is_relative_to(folder):
                return Skipped(str(path), _outside(target))
            opened = _open_inside(folder, target, path)
            if isinstance(opened, Skipped):
                return opened
            fd = opened
    except FileNotFoundError:
        return Skipped(str(path), _NOT_REGULAR)  # a dangling link, or a file deleted since it was found
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):  # swapped for something else between the check and the open
        os.close(fd)
        return Skipped(str(path), _special(mode))
    return fd


def _open_inside(folder: Path, target: Path, path: Path) -> int | Skipped:
    """Open ``target`` (resolved, inside ``folder``) from ``folder`` down, following no symbolic link.

    A component swapped for a link after ``target`` was resolved fails to open (ELOOP) instead of
    leading out of the folder.
    """
    parts = target.relative_to(folder).parts
    if not parts or not (os.open in os.supports_dir_fd and _NO_FOLLOW):
        # No *at() calls here (Windows): open the resolved path itself, its last component not followed.
        info = os.stat(target, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            return Skipped(str(path), _special(info.st_mode))
        return os.open(target, _OPEN_FLAGS | _NO_FOLLOW)
    directory = os.open(folder, os.O_RDONLY | _DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | _DIRECTORY | _NO_FOLLOW, dir_fd=directory)
            os.close(directory)
            directory = inner
        info = os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            return Skipped(str(path), _special(info.st_mode))
        try:
            return os.open(parts[-1], _OPEN_FLAGS | _NO_FOLLOW, dir_fd=directory)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return Skipped(str(path), "a symbolic link was swapped in while ingesting; not followed")
            raise
    finally:
        os.close(directory)


def _special(mode: int) -> str:
    """Why a file that is not a regular file is not read, naming what it is."""
    kinds = (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    kind = next((name for test, name in kinds if test(mode)), None)
    return _NOT_REGULAR if kind is None else f"{_NOT_REGULAR} ({kind})"
