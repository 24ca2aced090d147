"""Opening the configured database: an SQLite file at a path, or a PostgreSQL server at a ``postgresql://`` URL."""

from __future__ import annotations

from pathlib import Path

from storage.database import Database
from storage.postgres import PostgresDatabase
from storage.sqlite import SqliteDatabase
from storage.urls import is_postgres_url


async def open_database(target: str | Path, *, migrate: bool = True) -> Database:
    """Open (and migrate) the SQLite file at a path, or the PostgreSQL database at a ``postgresql://`` URL.

    Raises:
        StorageError: the database cannot be opened, reached or migrated (one line, never a password).
    """
    if is_postgres_url(target):
        return await PostgresDatabase.connect(str(target).strip(), migrate=migrate)
    return await SqliteDatabase.connect(Path(target), migrate=migrate)
