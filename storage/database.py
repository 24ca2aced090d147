"""The database the registry, audit trail, approvals and sessions share: one SQLite file, or a PostgreSQL server."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from storage.connection import Connection, Row
from storage.dialect import Dialect


class Database(ABC):
    """Reads on their own connection(s); writes through `transaction()`, one writer at a time across processes.

    Every write transaction holds the database's one write lock from its first statement to its commit (SQLite's
    ``BEGIN IMMEDIATE``; a transaction-scoped advisory lock on PostgreSQL), so what a writer reads inside its
    transaction (the audit chain's last hash, an approval still pending) is still true when it commits.
    """

    dialect: Dialect

    @property
    @abstractmethod
    def description(self) -> str:
        """Which database this is, for people: the engine and the file, or the server and database (no password)."""

    @abstractmethod
    async def close(self) -> None:
        """Close every connection."""

    @abstractmethod
    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a parameterized SELECT and return every row."""

    @abstractmethod
    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """Run a parameterized SELECT and return the first row, if any."""

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[Connection]:
        """Yield a connection inside a write transaction; commit on success, roll back on error."""

    async def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run a parameterized statement for many rows in one transaction."""
        async with self.transaction() as conn:
            await conn.executemany(sql, rows)
