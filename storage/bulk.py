"""Many rows in one step, counted: what SQLite's ``total_changes`` gives and asyncpg's ``executemany`` does not.

On PostgreSQL an insert of many rows goes as one statement over arrays (``unnest``), which is also its fastest
form; on SQLite as multi-row ``VALUES`` statements of up to `STATEMENT_PARAMETERS` parameters. A counted statement
run for each row goes row by row on one prepared statement.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from storage.connection import Connection
from storage.dialect import POSTGRES, SQLITE, Dialect, identifier, to_postgres
from storage.postgres import PostgresConnection

STATEMENT_PARAMETERS = 30_000 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
"""The most parameters one statement of many rows takes, on either engine: SQLite's limit is 32,766 since 3.32
(999 before), asyncpg's 32,767. SQLite inserts many rows as multi-row VALUES statements of up to this many: one
statement steps all its rows without holding the GIL, so the event loop's thread runs on while they are written,
where executemany takes the GIL back for every row it binds."""


def dialect_of(conn: Connection) -> Dialect:
    """The spelling of the engine behind a transaction's connection."""
    return POSTGRES if isinstance(conn, PostgresConnection) else SQLITE


async def insert_new(conn: Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """Insert ``rows``, leaving alone each whose unique key is stored already; return how many were inserted.

    ``table`` and ``columns`` are the product's own names (checked by `identifier`); the values are parameters.
    """
    return await _insert(conn, table, columns, rows, " ON CONFLICT DO NOTHING")


async def insert_all(conn: Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """Insert every one of ``rows`` (a stored unique key is an integrity error); return how many were inserted."""
    return await _insert(conn, table, columns, rows, "")


async def _insert(
    conn: Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], conflict: str
) -> int:
    if not rows:
        return 0
    names = ", ".join(identifier(column) for column in columns)
    into = f"INSERT INTO {identifier(table)} ({names})"
    if isinstance(conn, PostgresConnection):
        statement, arrays = _from_arrays(into, rows)
        return _count(await conn.raw.execute(statement + conflict, *arrays))
    before: int = conn.total_changes  # type: ignore[attr-defined]
    group = f"({', '.join('?' * len(columns))})"
    per = max(1, STATEMENT_PARAMETERS // len(columns))
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        statement = f"{into} VALUES {', '.join([group] * len(chunk))}{conflict}"
        await conn.execute(statement, [value for row in chunk for value in row])
    return int(conn.total_changes) - before  # type: ignore[attr-defined]


def _from_arrays(into: str, rows: Sequence[Sequence[Any]]) -> tuple[str, list[list[Any]]]:
    """``INSERT … SELECT`` over one typed array per column; a column of only NULLs is a plain NULL."""
    arrays: list[list[Any]] = []
    selected: list[str] = []
    unnested: list[str] = []
    for position, column in enumerate(zip(*rows, strict=True)):
        values = list(column)
        if all(value is None for value in values):
            selected.append("NULL")
            continue
        arrays.append(values)
        unnested.append(f"${len(arrays)}::{_array_type(values)}[]")
        selected.append(f"u.c{position}")
    aliases = ", ".join(name.removeprefix("u.") for name in selected if name != "NULL")
    select = f"SELECT {', '.join(selected)} FROM unnest({', '.join(unnested)}) AS u({aliases})"
    return f"{into} {select}", arrays


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
    """The PostgreSQL array element type for one column's values (ints among floats make it a float column)."""
    kinds = {type(value) for value in values if value is not None}
    if kinds == {bool}:
        return "boolean"
    if kinds == {int}:
        return "bigint"
    if kinds and kinds <= {int, float}:
        return "double precision"
    return "text"


def _count(status: str) -> int:
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0
