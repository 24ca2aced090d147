"""Shared fixtures: a temp database with migrations applied and the sample fleet, an app, a kernel."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kernel_setup import AppContext, Settings, load_settings, open_app
from storage import Database
from twin.sample_fleet import load_sample_fleet


@pytest.fixture
def settings_file(tmp_path: Path) -> Path:
    """A settings file in a temp folder whose relative paths land in that folder."""
    path = tmp_path / "appsettings.json"
    path.write_text(json.dumps({"Database": {"Path": "data/test.db"}, "Qdrant": {"Path": ":memory:"}}))
    return path


@pytest.fixture
def settings(settings_file: Path) -> Settings:
    return load_settings(settings_file, env={})


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "registry.db")
    await load_sample_fleet(database)
    yield database
    await database.close()


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[AppContext]:
    async with open_app(settings) as context:
        yield context
