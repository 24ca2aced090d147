"""One SQLite file through aiosqlite: WAL mode, a read connection and a serialized writer."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from core.errors import sentence
from storage.connection import Connection, Row
from storage.database import Database
from storage.dialect import SQLITE
from storage.errors import StorageError
from storage.migrations import apply_migrations


class SqliteDatabase(Database):
    """The project's SQLite database.

    Reads share one connection; writes go through `transaction()`, which serializes writers in
    this process with a lock and across processes with ``BEGIN IMMEDIATE`` (plus a busy timeout),
    so concurrent writers wait instead of failing with ``database is locked``.
    """

    def __init__(self, path: Path, reader: aiosqlite.Connection, writer: aiosqlite.Connection) -> None:
        self.path = path
        self._reader = reader
        self._writer = writer
        self._write_lock = asyncio.Lock()
        self.dialect = SQLITE

    @property
    def description(self) -> str:
        """The engine and the file."""
        return f"SQLite {self.path}"

    @classmethod
    async def connect(cls, path: Path, *, migrate: bool = True) -> SqliteDatabase:
        """Open (creating folders and file as needed) and migrate the database at ``path``."""
        path = Path(path)
        # Every failure path closes what it opened: aiosqlite's worker thread is not a daemon, so a
        # connection left open on a corrupt file keeps the process alive after the error is printed.
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = await _connect(path)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(
                f"Cannot open the database {str(path)!r}: {sentence(str(exc))} If the file is damaged, restore it from "
                "a backup or move it aside and run `pumpops db init`."
            ) from exc
        try:
            # Closed at once: a PRAGMA statement left open holds a lock that the second connection's setup waits on.
            async with writer.execute("PRAGMA journal_mode=WAL"):
                pass
            reader = await _connect(path)
        except BaseException as exc:
            await _close_quietly(writer)
            if isinstance(exc, OSError | sqlite3.Error):
                raise _prepare_failure(path, exc) from exc
            raise
        database = cls(path, reader, writer)
        if migrate:
            try:
                await apply_migrations(database)
            except BaseException as exc:
                await database.close()
                if isinstance(exc, OSError | sqlite3.Error):
                    raise _prepare_failure(path, exc) from exc
                raise
        return database

    async def close(self) -> None:
        """Close both connections."""
        await self._reader.close()
        await self._writer.close()

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a parameterized SELECT and return every row.

        The statement runs to completion in one step on the reader's thread: a statement left open
        between awaits would pin every concurrent read on this connection to an old WAL snapshot,
        hiding rows committed since (seen under load as a just-parked approval "not found").
        """
        try:
            return list(await self._reader.execute_fetchall(sql, params))
        except sqlite3.DatabaseError as exc:
            raise StorageError(_read_failure(exc)) from exc

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """Run a parameterized SELECT and return the first row, if any (completed in one step, see `fetch_all`)."""
        try:
            rows = await self._reader.execute_fetchall(sql, params)
        except sqlite3.DatabaseError as exc:
            raise StorageError(_read_failure(exc)) from exc
        return next(iter(rows), None)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """Yield the writer inside ``BEGIN IMMEDIATE``; commit on success, roll back on error."""
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                await self._writer.rollback()
                raise
            else:
                await self._writer.commit()


def _prepare_failure(path: Path, exc: BaseException) -> StorageError:
    """The error for a freshly opened file that cannot be set up (journal mode, second connection, migrations)."""
    return StorageError(
        f"Cannot prepare the database {str(path)!r}: {sentence(str(exc))} If the file is damaged, "
        "restore it from a backup or move it aside and run `pumpops db init`."
    )


def _read_failure(exc: sqlite3.DatabaseError) -> str:
    """A read error for any reader (the model included): what failed, no path, and what fixes a damaged file."""
    return f"Cannot read the database: {exc}. If the file is damaged, restore it from a backup."


async def _connect(path: Path) -> aiosqlite.Connection:
    """A configured connection; closed again (its worker thread stopped) when configuring it fails."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        await conn.execute("PRAGMA busy_timeout=10000")
        await conn.execute("PRAGMA foreign_keys=ON")
        await conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        await _close_quietly(conn)
        raise
    return conn


async def _close_quietly(conn: aiosqlite.Connection) -> None:
    """Close a connection on a failure path, keeping the original error: a close failing too is not news."""
    with contextlib.suppress(sqlite3.Error, ValueError):
        await conn.close()  # stops the worker thread even when closing the sqlite3 connection fails
