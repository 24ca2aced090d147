"""A latest reading older than `Telemetry.StaleAfterSeconds` is marked stale in every read that shows it."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from semantic_kernel.functions import KernelArguments

from kernel_setup import AppContext, load_settings, open_app
from tests.postgres_server import database_section

STALE_AFTER = 900.0


class Clock:
    """The time the app measures ages against; a test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@asynccontextmanager
async def _open(
    tmp_path: Path, database: str | Path, clock: Clock, stale_after: float | None
) -> AsyncIterator[AppContext]:
    """The app on ``database`` (the test's `database_target`, either backend), measuring ages against ``clock``."""
    telemetry = {} if stale_after is None else {"StaleAfterSeconds": stale_after}
    path = tmp_path / "appsettings.json"
    document = {"Database": database_section(database), "Qdrant": {"Path": ":memory:"}, "Telemetry": telemetry}
    path.write_text(json.dumps(document))
    async with open_app(load_settings(path, env={}), clock=clock) as app:
        yield app


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def stale_app(tmp_path: Path, database_target: str | Path, clock: Clock) -> AsyncIterator[AppContext]:
    async with _open(tmp_path, database_target, clock, STALE_AFTER) as app:
        yield app


@pytest.fixture
async def unmarked_app(tmp_path: Path, database_target: str | Path, clock: Clock) -> AsyncIterator[AppContext]:
    async with _open(tmp_path, database_target, clock, None) as app:
        yield app


async def _invoke(app: AppContext, name: str, **arguments: Any) -> Any:
    plugin, _, function = name.partition("-")
    result = await app.kernel.invoke(app.kernel.get_function(plugin, function), KernelArguments(**arguments))
    assert result is not None
    return json.loads(str(result.value))


def _at(recorded_at: str) -> datetime:
    return datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))


async def _latest_time(app: AppContext) -> datetime:
    details = await _invoke(app, "assets-get_pump_details", pump_id="PUMP-003")
    return max(_at(r["recorded_at"]) for r in details["latest_readings"])


async def test_pump_details_mark_every_reading_older_than_the_stale_age(stale_app: AppContext, clock: Clock) -> None:
    clock.now = await _latest_time(stale_app) + timedelta(seconds=STALE_AFTER + 600)
    details = await _invoke(stale_app, "assets-get_pump_details", pump_id="PUMP-003")
    for reading in details["latest_readings"]:
        assert reading["stale"] is True
        assert reading["age_seconds"] == int((clock.now - _at(reading["recorded_at"])).total_seconds())
    assert details["stale_note"].startswith("5 values are stale")
    assert "do not present a stale value as current" in details["stale_note"]


async def test_fresh_readings_carry_no_stale_fields(stale_app: AppContext, clock: Clock) -> None:
    clock.now = await _latest_time(stale_app) + timedelta(seconds=STALE_AFTER / 2)
    details = await _invoke(stale_app, "assets-get_pump_details", pump_id="PUMP-003")
    assert all("stale" not in r and "age_seconds" not in r for r in details["latest_readings"])
    assert "stale_note" not in details
    readings = await _invoke(stale_app, "sensors-get_sensor_readings", sensor_type="vibration")
    assert all("stale" not in r for r in readings["readings"]) and "stale_note" not in readings


async def test_sensor_readings_mark_stale_values(stale_app: AppContext, clock: Clock) -> None:
    clock.now = await _latest_time(stale_app) + timedelta(hours=2)
    readings = await _invoke(stale_app, "sensors-get_sensor_readings", sensor_type="vibration")
    assert readings["readings"] and all(r["stale"] is True for r in readings["readings"])
    assert all(r["age_seconds"] >= 7200 for r in readings["readings"])
    assert readings["stale_note"].startswith(f"{len(readings['readings'])} values are stale")


async def test_the_trend_and_the_fleet_summary_mark_a_stale_latest_value(stale_app: AppContext, clock: Clock) -> None:
    clock.now = await _latest_time(stale_app) + timedelta(hours=2)
    trend = await _invoke(stale_app, "sensors-get_sensor_trend", pump_id="PUMP-003", sensor_type="vibration")
    assert trend["stale"] is True and trend["age_seconds"] >= 7200
    assert trend["stale_note"].startswith("1 value is stale")
    summary = await _invoke(stale_app, "assets-get_system_summary")
    assert summary["worst_pump"]["stale"] is True and summary["worst_pump"]["stale_note"]


async def test_no_stale_age_set_marks_nothing(unmarked_app: AppContext, clock: Clock) -> None:
    clock.now = await _latest_time(unmarked_app) + timedelta(days=365)
    details = await _invoke(unmarked_app, "assets-get_pump_details", pump_id="PUMP-003")
    readings = await _invoke(unmarked_app, "sensors-get_sensor_readings", sensor_type="flow")
    trend = await _invoke(unmarked_app, "sensors-get_sensor_trend", pump_id="PUMP-003", sensor_type="flow")
    assert "stale" not in json.dumps([details, readings, trend])
