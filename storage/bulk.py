"""Many rows in one step, counted: what SQLite's ``total_changes`` gives and asyncpg's ``executemany`` does not.

On PostgreSQL an insert of many rows goes as one statement over arrays (``unnest``), which is also its fastest
form; a counted statement run for each row goes row by row on one prepared statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storage.connection import Connection
from storage.dialect import POSTGRES, SQLITE, Dialect, identifier, to_postgres
from storage.postgres import PostgresConnection


def dialect_of(conn: Connection) -> Dialect:
    """The spelling of the engine behind a transaction's connection."""
    return POSTGRES if isinstance(conn, PostgresConnection) else SQLITE


_ARRAY_TYPES: tuple[tuple[type, str], ...] = ((bool, "boolean"), (int, "bigint"), (float, "double precision"))


async def insert_new(conn: Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """Insert ``rows``, leaving alone each whose unique key is stored already; return how many were inserted.

    ``table`` and ``columns`` are the product's own names (checked by `identifier`); the values are parameters.
    """
    if not rows:
        return 0
    names = ", ".join(identifier(column) for column in columns)
    into = f"INSERT INTO {identifier(table)} ({names})"
    if isinstance(conn, PostgresConnection):
        arrays = [list(column) for column in zip(*rows, strict=True)]
        unnest = ", ".join(f"${i}::{_array_type(values)}[]" for i, values in enumerate(arrays, start=1))
        statement = f"{into} SELECT * FROM unnest({unnest}) ON CONFLICT DO NOTHING"
        return _count(await conn.raw.execute(statement, *arrays))
    statement = f"{into} VALUES ({', '.join('?' * len(columns))}) ON CONFLICT DO NOTHING"
    before: int = conn.total_changes  # type: ignore[attr-defined]
    await conn.executemany(statement, rows)
    return int(conn.total_changes) - before  # type: ignore[attr-defined]


async def changed_by_each(conn: Connection, sql: str, rows: Sequence[Sequence[Any]]) -> int:
    """Run ``sql`` (an UPDATE or DELETE) once for each row of parameters; return how many rows it changed in all."""
    if not rows:
        return 0
    if isinstance(conn, PostgresConnection):
        statement = await conn.raw.prepare(to_postgres(sql))
        changed = 0
        for row in rows:
            await statement.fetch(*row)
            changed += _count(statement.get_statusmsg())
        return changed
    before: int = conn.total_changes  # type: ignore[attr-defined]
    await conn.executemany(sql, rows)
    return int(conn.total_changes) - before  # type: ignore[attr-defined]


def _array_type(values: list[Any]) -> str:
    """The PostgreSQL array element type for one column's values: by the first value that is not None."""
    sample = next((value for value in values if value is not None), "")
    for python_type, name in _ARRAY_TYPES:
        if type(sample) is python_type:
            return name
    return "text"


def _count(status: str) -> int:
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0
