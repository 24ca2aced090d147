"""A PostgreSQL database through asyncpg: a small pool for reads and one writer connection per process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator, Iterable, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

import asyncpg

from core.errors import sentence
from storage.connection import Connection, Row
from storage.database import Database
from storage.dialect import POSTGRES, to_postgres
from storage.errors import StorageError
from storage.migrations import apply_migrations
from storage.urls import describe_url

WRITE_LOCK_KEY = 0x50554D50  # "PUMP": the transaction-scoped advisory lock every write transaction takes first
READ_POOL_SIZE = 4
CONNECT_TIMEOUT_S = 10.0


class PostgresDatabase(Database):
    """The project's database on a PostgreSQL server.

    Writes in this process share one connection behind an asyncio lock, and every write transaction first takes
    one transaction-scoped advisory lock, so writers in all processes run one at a time, as on SQLite. Reads use
    a pool and never wait for writers.
    """

    def __init__(self, url: str, pool: asyncpg.Pool, writer: asyncpg.Connection) -> None:
        self.url = url
        self._pool = pool
        self._writer = writer
        self._write_lock = asyncio.Lock()
        self.dialect = POSTGRES

    @property
    def description(self) -> str:
        """The server and database, without the password."""
        return f"PostgreSQL {describe_url(self.url)}"

    @classmethod
    async def connect(cls, url: str, *, migrate: bool = True) -> PostgresDatabase:
        """Connect to the database at ``url`` and migrate it; a one-line `StorageError` (no password) on failure."""
        where = describe_url(url)
        try:
            writer = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT_S)
            await _configure(writer)
        except Exception as exc:
            raise StorageError(connect_failure(where, exc)) from exc
        try:
            pool = await asyncpg.create_pool(
                url, min_size=1, max_size=READ_POOL_SIZE, timeout=CONNECT_TIMEOUT_S, init=_configure
            )
        except Exception as exc:
            await writer.close()
            raise StorageError(connect_failure(where, exc)) from exc
        database = cls(url, pool, writer)
        if migrate:
            try:
                await apply_migrations(database)
            except BaseException as exc:
                await database.close()
                if isinstance(exc, asyncpg.PostgresError | asyncpg.InterfaceError | OSError):
                    raise StorageError(f"Cannot prepare the database {where}: {sentence(str(exc))}") from exc
                raise
        return database

    async def close(self) -> None:
        """Close the writer and the read pool."""
        try:
            await self._writer.close()
        finally:
            await self._pool.close()

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a parameterized SELECT on a pooled connection and return every row."""
        try:
            async with self._pool.acquire() as conn:
                return list(await conn.fetch(to_postgres(sql), *params))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise StorageError(f"Cannot read the database: {sentence(str(exc))}") from exc

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """Run a parameterized SELECT and return the first row, if any."""
        rows = await self.fetch_all(sql, params)
        return rows[0] if rows else None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """Yield the writer inside a transaction that holds the write lock; commit on success, roll back on error."""
        async with self._write_lock:
            await self._writer.execute(_BEGIN_WRITE)
            try:
                yield PostgresConnection(self._writer)
            except BaseException:
                if self._writer.is_in_transaction():
                    await self._writer.execute("ROLLBACK")
                raise
            await self._writer.execute("COMMIT")


# BEGIN and the lock in one message (one round trip to the server): a simple query runs its statements in
# order, so the lock is held before any statement of the transaction takes its snapshot.
_BEGIN_WRITE = f"BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY:d})"


async def _configure(conn: asyncpg.Connection) -> None:
    """Make results read as on SQLite: ``numeric`` (what AVG and SUM of integers give) as a float, not a Decimal."""
    await conn.set_type_codec("numeric", encoder=str, decoder=float, schema="pg_catalog", format="text")


class PostgresConnection:
    """The `storage.Connection` of a PostgreSQL transaction: SQLite-style SQL in, asyncpg calls out."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> _Execution:
        """One statement, run when awaited or entered (``async with conn.execute(...) as cursor``)."""
        return _Execution(self.raw, to_postgres(sql), tuple(parameters))

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> None:
        """One statement for each row of parameters (no count: `storage.bulk` counts)."""
        rows = [tuple(row) for row in parameters]
        if rows:
            await self.raw.executemany(to_postgres(sql), rows)

    async def execute_fetchall(self, sql: str, parameters: Sequence[Any] = (), /) -> list[asyncpg.Record]:
        """Every row of one query (aiosqlite's method of the same name)."""
        return list(await self.raw.fetch(to_postgres(sql), *parameters))


class _Execution:
    """One statement: run when awaited or entered; rows for a query, the changed-row count for a command."""

    def __init__(self, conn: asyncpg.Connection, sql: str, parameters: tuple[Any, ...]) -> None:
        self._conn = conn
        self._sql = sql
        self._parameters = parameters

    async def _run(self) -> _Cursor:
        if _returns_rows(self._sql):
            rows = await self._conn.fetch(self._sql, *self._parameters)
            return _Cursor(list(rows), len(rows))
        status = await self._conn.execute(self._sql, *self._parameters)
        return _Cursor([], _changed(status))

    def __await__(self) -> Generator[Any, None, _Cursor]:
        return self._run().__await__()

    async def __aenter__(self) -> _Cursor:
        return await self._run()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class _Cursor:
    """The rows of a finished statement and how many rows it changed."""

    def __init__(self, rows: list[asyncpg.Record], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    async def fetchone(self) -> asyncpg.Record | None:
        return self._rows[0] if self._rows else None

    async def fetchall(self) -> list[asyncpg.Record]:
        return list(self._rows)


def _returns_rows(sql: str) -> bool:
    head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return head in {"SELECT", "WITH", "VALUES", "SHOW"} or " RETURNING " in f" {sql.upper()} "


def _changed(status: str) -> int:
    """The row count at the end of a command tag such as ``UPDATE 3`` or ``INSERT 0 1``; 0 when it has none."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def connect_failure(where: str, exc: BaseException) -> str:
    """One line naming the server and database and what went wrong, without echoing the URL (it holds a password)."""
    reason = _reason(exc)
    return (
        f"Cannot connect to PostgreSQL {where}: {reason} Check Database.Url "
        "(postgresql://user:password@host:5432/database) and that the server is running."
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncpg.InvalidPasswordError):
        return "the server refused the password."
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return "the database does not exist."
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "no answer within the connect timeout."
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (no server listening there)."
    if isinstance(exc, OSError):
        return sentence(exc.strerror or str(exc))
    if isinstance(exc, ValueError):
        return "the URL is not a valid PostgreSQL URL."
    return sentence(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
