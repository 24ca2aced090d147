"""A real PostgreSQL server for the tests: pgserver's binaries, started once per test session in a temp folder.

Each test gets its own database, copied from a template that holds the migrated schema (copying is much faster
than migrating), and dropped when the test ends.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from kernel_setup import load_settings
from storage import open_database
from storage.local_server import start_postgres
from storage.urls import with_database

BACKENDS = ("sqlite", "postgresql")
TEMPLATE = "pumpops_template"
_numbers = itertools.count(1)


@dataclass(frozen=True)
class PostgresServer:
    """A running server: the URL of its maintenance database, and the URL form of any other database on it."""

    admin_url: str

    def url(self, database: str) -> str:
        """The URL of ``database`` on this server."""
        return with_database(self.admin_url, database)


SERVER_VARIABLE = "TEST_POSTGRES_URL"
"""Runs the PostgreSQL tests on a server of your own (another version, a managed service) instead of pgserver's
(no ``PUMPOPS_`` prefix: those variables are settings):
the URL of a role that may create databases, e.g. ``postgresql://postgres@/postgres?host=/run/postgresql``."""


def start_server(folder: Path) -> PostgresServer:
    """Start the server (skipping the PostgreSQL runs, with the reason, when it cannot start) and build the template.

    With `SERVER_VARIABLE` set, the tests use that server instead and start none.
    """
    given = os.environ.get(SERVER_VARIABLE, "").strip()
    if given:
        postgres = PostgresServer(given)
    else:
        try:
            local = start_postgres(folder / "data")
        except Exception as exc:  # the reason goes into the skip, so CI shows why PostgreSQL did not run
            pytest.skip(f"PostgreSQL tests skipped: pgserver could not start a server ({type(exc).__name__}: {exc})")
        postgres = PostgresServer(local.admin_url)
    # Its own thread and event loop: the first test to ask for the server may be running in a loop already.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, _build_template(postgres)).result()
    return postgres


async def _build_template(server: PostgresServer) -> None:
    admin = await asyncpg.connect(server.admin_url)
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        await admin.execute(f"CREATE DATABASE {TEMPLATE}")
    finally:
        await admin.close()
    database = await open_database(server.url(TEMPLATE))
    await database.close()


@asynccontextmanager
async def fresh_database(server: PostgresServer) -> AsyncIterator[str]:
    """A new database copied from the template; dropped (its connections ended) afterwards."""
    name = f"test_{os.getpid()}_{next(_numbers)}"
    admin = await asyncpg.connect(server.admin_url)
    try:
        await admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    finally:
        await admin.close()
    try:
        yield server.url(name)
    finally:
        admin = await asyncpg.connect(server.admin_url)
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        finally:
            await admin.close()


def database_section(target: str | Path, path: str = "data/test.db") -> dict[str, str]:
    """A settings file's ``Database`` section for a test's `database_target`.

    On SQLite the database is the file at ``path`` (relative to the settings file, as a site writes it); on
    PostgreSQL ``Url`` is the target's fresh database, and ``path`` is unused.
    """
    return {"Path": path, **({"Url": target} if isinstance(target, str) else {})}


def query(settings_file: Path, sql: str, params: tuple[object, ...] = ()) -> list[dict[str, object]]:
    """Every row of one query on the database ``settings_file`` points to, from synchronous code (a CLI test)."""

    async def rows() -> list[dict[str, object]]:
        database = await open_database(load_settings(settings_file, env={}).database_target, migrate=False)
        try:
            return [dict(row) for row in await database.fetch_all(sql, params)]
        finally:
            await database.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, rows()).result()
