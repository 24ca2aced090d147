"""Provider selection: ollama | local | auto, against a fake Ollama at the HTTP boundary."""

import json
from pathlib import Path

import httpx
import ollama
import pytest

from chat import provider
from chat.factory import ModelUnavailableError
from chat.local import llama_check
from chat.local.llama_check import Verdict
from chat.local.service import LocalChatCompletion
from chat.ollama.service import HardenedOllamaChatCompletion
from chat.provider import AutoChatCompletion, chat_backend, local_model_problem, resolve_provider
from kernel_setup import Settings, load_settings
from kernel_setup.settings import ChatProvider
from tests.fakes.ollama import MODEL, ScriptedOllama


def settings_for(tmp_path: Path, provider: str, model_file: Path | None = None) -> Settings:
    path = tmp_path / "appsettings.json"
    local = {"Path": str(model_file or tmp_path / "missing.gguf")}
    path.write_text(json.dumps({"Chat": {"Provider": provider}, "LocalModel": local}))
    return load_settings(path, env={})


def client(transport: httpx.AsyncBaseTransport) -> ollama.AsyncClient:
    return ollama.AsyncClient(host="http://127.0.0.1:11434", transport=transport)


def down() -> httpx.MockTransport:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    return httpx.MockTransport(refuse)


@pytest.fixture
def model_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model file the local provider counts as usable: llama-cpp-python there and its self-test passed."""
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setattr(provider, "llama_available", lambda: True)
    monkeypatch.setattr(llama_check, "self_test", lambda path, threads: Verdict(None))
    return path


async def test_auto_uses_ollama_when_it_is_up_with_the_model(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "auto")
    assert await resolve_provider(settings, client(ScriptedOllama([]).transport())) == ChatProvider.OLLAMA


async def test_auto_falls_back_to_local_when_ollama_is_down(tmp_path: Path, model_file: Path) -> None:
    settings = settings_for(tmp_path, "auto", model_file)
    assert await resolve_provider(settings, client(down())) == ChatProvider.LOCAL


async def test_auto_falls_back_to_local_when_ollama_lacks_the_model(tmp_path: Path, model_file: Path) -> None:
    settings = settings_for(tmp_path, "auto", model_file)
    fake = ScriptedOllama([], models=["llama3:8b"])
    assert await resolve_provider(settings, client(fake.transport())) == ChatProvider.LOCAL


async def test_auto_with_neither_says_how_to_fix_both(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "auto")
    with pytest.raises(ModelUnavailableError, match=r"Cannot reach Ollama.*pumpops"):
        await resolve_provider(settings, client(down()))


async def test_local_without_the_model_file_is_refused_with_the_install_command(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "local")
    with pytest.raises(ModelUnavailableError, match="pumpops"):
        await resolve_provider(settings, client(down()))
    assert "pumpops" in (local_model_problem(settings) or "")


async def test_ollama_is_checked_as_before(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "ollama")
    with pytest.raises(ModelUnavailableError, match="Cannot reach Ollama"):
        await resolve_provider(settings, client(down()))


def test_the_backend_follows_the_provider(tmp_path: Path, model_file: Path) -> None:
    c = client(down())
    assert isinstance(chat_backend(settings_for(tmp_path, "ollama"), c).service, HardenedOllamaChatCompletion)
    local = chat_backend(settings_for(tmp_path, "local", model_file), c)
    assert isinstance(local.service, LocalChatCompletion) and local.num_ctx == 8192
    assert isinstance(chat_backend(settings_for(tmp_path, "auto"), c).service, AutoChatCompletion)


async def test_the_auto_service_delegates_to_ollama_when_it_is_up(tmp_path: Path) -> None:
    from semantic_kernel.contents import ChatHistory

    from tests.fakes.ollama import reply

    fake = ScriptedOllama([reply("Hello from Ollama.")])
    backend = chat_backend(settings_for(tmp_path, "auto"), client(fake.transport()))
    history = ChatHistory()
    history.add_user_message("hi")
    chunks = [
        c
        async for batch in backend.service.get_streaming_chat_message_contents(history, backend.execution_settings)
        for c in batch
    ]
    assert "".join(c.content or "" for c in chunks) == "Hello from Ollama."
    assert fake.requests[0]["model"] == MODEL


async def test_the_auto_service_hands_the_requests_response_format_to_the_provider_it_chose(tmp_path: Path) -> None:
    from semantic_kernel.contents import ChatHistory

    from chat.response_format import with_response_format
    from tests.fakes.ollama import reply

    schema = {"type": "object", "properties": {"claims": {"type": "array"}}}
    fake = ScriptedOllama([reply('{"claims": []}'), reply("Free text.")])
    backend = chat_backend(settings_for(tmp_path, "auto"), client(fake.transport()))
    history = ChatHistory()
    history.add_user_message("hi")
    for settings in (with_response_format(backend.execution_settings, schema), backend.execution_settings):
        [_ async for _ in backend.service.get_streaming_chat_message_contents(history, settings)]
    assert fake.requests[0]["format"] == schema
    assert "format" not in fake.requests[1]  # per request: the backend's own options are unchanged
