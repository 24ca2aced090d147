"""A value the results mark stale is never shown as current: through the real runner and the scripted fake Ollama."""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kernel_setup import Settings, load_settings, open_app
from tests.fakes.ollama import ScriptedOllama, call, reply
from tests.postgres_server import database_section
from turn.events import TextDelta, TurnFinished, TurnResult
from turn.factory import runner_for

QUESTION = "What is PUMP-007's vibration?"
UNQUALIFIED = "PUMP-007 vibration is 9.4 mm/s."


def _later() -> datetime:
    """Two hours after the sample fleet's newest reading (it is stamped at the current hour)."""
    return datetime.now(UTC) + timedelta(hours=2)


@pytest.fixture
def stale_settings(tmp_path: Path, database_target: str | Path) -> Settings:
    """Settings with a 15-minute stale age, on the test's database (either backend)."""
    path = tmp_path / "appsettings.json"
    body = {
        "Database": database_section(database_target, "t.db"),
        "Qdrant": {"Path": ":memory:"},
        "Telemetry": {"StaleAfterSeconds": 900},
    }
    path.write_text(json.dumps(body))
    return load_settings(path, env={})


async def stale_turn(settings: Settings, *answers: str) -> tuple[TurnResult, str]:
    """A turn reading PUMP-007's details two hours after its readings, with ``settings``' 15-minute stale age."""
    steps: list[Any] = [reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-007")])]
    fake = ScriptedOllama([*steps, *(reply(a) for a in answers)])
    async with open_app(settings, chat_transport=fake.transport(), clock=_later) as app:
        events = [e async for e in runner_for(app).stream(QUESTION)]
    assert isinstance(events[-1], TurnFinished)
    return events[-1].result, "".join(e.text for e in events if isinstance(e, TextDelta))


def outcomes(result: TurnResult) -> list[tuple[str, str]]:
    return list(dict.fromkeys((c.check, c.action) for c in result.corrections))


async def test_a_stale_value_stated_as_current_is_replaced_by_one_with_its_reading_time(
    stale_settings: Settings,
) -> None:
    result, shown = await stale_turn(stale_settings, UNQUALIFIED, "The vibration of PUMP-007 is 9.4 mm/s now.")
    assert outcomes(result) == [("stale_readings", "replaced")]
    assert "PUMP-007 vibration 9.4 mm/s is stale (last reading at " in result.corrections[0].finding
    assert "PUMP-007: vibration 9.4 mm/s, ISO 10816-3 zone D" in result.answer
    assert "UTC, stale)." in result.answer and UNQUALIFIED not in shown
    assert shown == result.answer


async def test_a_stale_value_qualified_on_the_second_try_shows_the_second_answer(stale_settings: Settings) -> None:
    second = "PUMP-007's last vibration reading was 9.4 mm/s; it is stale, so check the sensor link."
    result, shown = await stale_turn(stale_settings, UNQUALIFIED, second)
    assert outcomes(result) == [("stale_readings", "retried")]
    assert result.answer == second == shown


@pytest.mark.parametrize("age", ["over 900 s", "over 15 minutes old"])
async def test_an_answer_that_says_the_value_is_stale_passes_untouched(stale_settings: Settings, age: str) -> None:
    good = "PUMP-007's vibration was 9.4 mm/s at its last reading, which is stale (no new reading for " + age + ")."
    result, shown = await stale_turn(stale_settings, good)
    assert result.answer == good == shown and result.corrections == []
