"""The turn tests' settings: `Agent` options of the test's choosing, on the test's database (either backend)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import pytest

from kernel_setup import Settings, load_settings
from tests.postgres_server import database_section


class MakeSettings(Protocol):
    """Settings with these `Agent` options, in the test's folder, on the test's database (either backend)."""

    def __call__(self, **agent: Any) -> Settings: ...


@pytest.fixture
def make_settings(tmp_path: Path, database_target: str | Path) -> MakeSettings:
    def make(**agent: Any) -> Settings:
        path = tmp_path / "appsettings.json"
        database = database_section(database_target, "t.db")
        path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, "Agent": agent}))
        return load_settings(path, env={})

    return make
