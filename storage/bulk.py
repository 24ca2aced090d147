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
    statement = f"{into} VALUES ({', '.join('?' * len(columns))}){conflict}"
    before: int = conn.total_changes  # type: ignore[attr-defined]
    await conn.executemany(statement, rows)
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
