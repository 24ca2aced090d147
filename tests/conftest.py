"""Shared fixtures: a temp database with migrations applied and the sample fleet, an app, a kernel.

Every fixture that opens the registry (`database_target`, and through it `db`, `settings_file`, `settings`, `app`)
runs each test twice: on an SQLite file and on a PostgreSQL database of a real server that `pgserver` starts once
per test session (tests/postgres_server.py). Where no server can start, the PostgreSQL runs skip with the reason.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kernel_setup import AppContext, Settings, load_settings, open_app
from storage import Database, open_database
from tests.postgres_server import BACKENDS, PostgresServer, fresh_database, start_server
from twin.sample_fleet import load_sample_fleet


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> PostgresServer:
    """One real PostgreSQL for the whole run, with a migrated template each test's database is copied from."""
    return start_server(tmp_path_factory.mktemp("postgres"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The engine under test: ``sqlite`` or ``postgresql``."""
    return str(request.param)


@pytest.fixture
async def database_target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[str | Path]:
    """What `Database.open` takes: a fresh SQLite file, or the URL of a fresh, migrated PostgreSQL database."""
    if backend == "sqlite":
        yield tmp_path / "registry.db"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    async with fresh_database(server) as url:
        yield url


@pytest.fixture
def settings_file(tmp_path: Path, database_target: str | Path) -> Path:
    """A settings file in a temp folder whose relative paths land in that folder."""
    path = tmp_path / "appsettings.json"
    database: dict[str, str] = {"Path": "data/test.db"}
    if isinstance(database_target, str):
        database["Url"] = database_target
    path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}}))
    return path


@pytest.fixture
def settings(settings_file: Path) -> Settings:
    return load_settings(settings_file, env={})


@pytest.fixture
async def db(database_target: str | Path) -> AsyncIterator[Database]:
    database = await open_database(database_target)
    await load_sample_fleet(database)
    yield database
    await database.close()


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[AppContext]:
    async with open_app(settings) as context:
        yield context
