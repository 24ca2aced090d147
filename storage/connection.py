"""What the product sees of a database connection, whichever engine is behind it.

Product code writes one SQL text with ``?`` placeholders (or ``?1``, ``?2`` when a value is used twice) and portable
SQL; the PostgreSQL connection translates placeholders and the few type names that differ (storage/dialect.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import asyncpg


class Row(Protocol):
    """A result row: values by column name or position (`sqlite3.Row` and `asyncpg.Record` both are)."""

    def __getitem__(self, key: str | int, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> Any:
        """The column names."""
        ...


class Connection(Protocol):
    """The connection inside `Database.transaction()`: statements run in that one transaction."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any:
        """One statement: awaited, or entered as ``async with conn.execute(...) as cursor``.

        The cursor has ``fetchone``, ``fetchall`` and ``rowcount``; typed loosely, as aiosqlite's own result is.
        """
        ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Awaitable[Any]:
        """One statement for each row of parameters."""
        ...

    def execute_fetchall(self, sql: str, parameters: Sequence[Any] = ..., /) -> Awaitable[Iterable[Any]]:
        """Every row of one query."""
        ...


DRIVER_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, asyncpg.PostgresError, asyncpg.InterfaceError)
"""What either driver raises for a statement that fails (a constraint, a lock, a lost connection)."""

INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, asyncpg.IntegrityConstraintViolationError)
"""A row that breaks a constraint: a duplicate key, a missing parent, a failed CHECK."""
