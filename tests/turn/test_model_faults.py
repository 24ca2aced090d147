"""Model-side faults on the Ollama path: each ends as a clear error or a degraded answer, never a hang."""

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kernel_setup import Settings, load_settings, open_app
from tests.fakes.ollama import MODEL, ScriptedOllama, call, reply
from turn.errors import ChatServiceError
from turn.factory import check_model, runner_for

WITHIN = 10.0


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    path = tmp_path / "appsettings.json"
    path.write_text(
        json.dumps(
            {
                "Database": {"Path": "f.db"},
                "Qdrant": {"Path": ":memory:"},
                "Chat": {"Provider": "ollama"},
                "Agent": {"DeadlineSeconds": 2},
            }
        )
    )
    return load_settings(path, env={})


async def turn(settings: Settings, transport: httpx.AsyncBaseTransport, question: str = "Hi") -> Any:
    async with open_app(settings, chat_transport=transport) as app:
        return await asyncio.wait_for(runner_for(app).run(question), timeout=WITHIN)


async def test_connection_refused_is_a_clear_error(settings: Settings) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(ChatServiceError, match="Connection refused"):
        await turn(settings, httpx.MockTransport(refuse))


class _StallingStream(httpx.AsyncByteStream):
    """Sends one chunk, then stalls as a server that hangs mid-stream."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield (json.dumps(reply("PUMP-007 is", done=False)) + "\n").encode()
        await asyncio.sleep(60)
        yield b""


async def test_a_stream_that_stalls_midway_degrades_at_the_deadline(settings: Settings) -> None:
    def stall(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=_StallingStream(), headers={"content-type": "application/x-ndjson"})

    result = await turn(settings, httpx.MockTransport(stall))
    assert result.degraded and "deadline" in (result.reason or "")


async def test_arguments_sent_as_a_string_are_handled(settings: Settings) -> None:
    body = reply()
    body["message"]["tool_calls"] = [
        {"function": {"name": "assets-get_pump_details", "arguments": '{"pump_id": "PUMP-007"}'}}
    ]
    fake = ScriptedOllama([body, reply("PUMP-007 is at 9.4 mm/s.")])
    try:
        result = await turn(settings, fake.transport())
    except ChatServiceError as exc:
        assert "chat model failed" in str(exc)
        return
    assert result.tool_calls and result.tool_calls[0].status in {"ok", "rejected"}


async def test_a_tool_name_with_spaces_is_rejected_with_the_valid_names(settings: Settings) -> None:
    fake = ScriptedOllama(
        [
            reply(tool_calls=[call("assets get pump details", pump_id="PUMP-007")]),
            reply("I could not call that."),
        ]
    )
    result = await turn(settings, fake.transport())
    assert result.tool_calls[0].status == "rejected"
    assert "assets-get_pump_details" in fake.tool_messages(1)[0]["content"]


async def test_fifty_tool_calls_in_one_message_are_bounded(settings: Settings) -> None:
    calls = [
        call("sensors-get_sensor_trend", pump_id="PUMP-007", sensor_type="vibration", days=d) for d in range(1, 51)
    ]
    fake = ScriptedOllama([reply(tool_calls=calls), reply("Done.")])
    result = await turn(settings, fake.transport())
    statuses = [c.status for c in result.tool_calls]
    assert len(statuses) == 50
    assert statuses.count("ok") <= 16 and "rejected" in statuses
    assert len(fake.tool_messages(1)) == 50  # every call is answered, in call order


async def test_an_empty_model_list_on_the_host_names_the_missing_model(settings: Settings) -> None:
    fake = ScriptedOllama([], models=[])
    async with open_app(settings, chat_transport=fake.transport()) as app:
        with pytest.raises(Exception, match=MODEL.replace(".", r"\.")):
            await check_model(app)
