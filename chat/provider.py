"""Which chat backend answers: `Chat.Provider` = ``ollama`` | ``local`` | ``auto``.

``auto`` uses Ollama when the host answers and has the configured model, else the in-process
model. The choice needs a network probe, so for ``auto`` the service is a small delegating
`AutoChatCompletion` that probes on its first request (and `check_chat_model` probes up front).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import ollama
from pydantic import PrivateAttr
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents.chat_history import ChatHistory
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.streaming_chat_message_content import StreamingChatMessageContent

from chat.factory import (
    ModelUnavailableError,
    check_ollama,
    ollama_execution_settings,
    ollama_service,
)
from chat.local.llama_check import self_test_verdict
from chat.local.llama_engine import llama_available, load_engine
from chat.local.service import LocalChatCompletion
from chat.local.settings import LocalChatPromptExecutionSettings, Relevance
from chat.response_format import response_format, with_response_format
from kernel_setup.settings import ChatProvider, Settings

__all__ = [
    "AutoChatCompletion",
    "ChatBackend",
    "chat_backend",
    "check_chat_model",
    "local_execution_settings",
    "local_model_problem",
    "local_service",
    "resolve_provider",
]

SERVICE_ID = "pumpops-chat"


@dataclass(frozen=True)
class ChatBackend:
    """What a turn runner needs from the chosen provider."""

    service: ChatCompletionClientBase
    execution_settings: PromptExecutionSettings
    num_ctx: int | None


def local_model_problem(settings: Settings) -> str | None:
    """Why the local model cannot run (a sentence saying what to do), or None when it can."""
    path = settings.resolve(settings.local_model.path)
    if not llama_available():
        return (
            "llama-cpp-python is not installed: run `make local` (or pip install 'pumpops[local]', "
            "then `pumpops model install`)."
        )
    if not path.is_file():
        return f"the local model is not installed at {str(path)!r}: run `pumpops model install`."
    failure = self_test_verdict(path, threads=settings.local_model.threads).failure
    if failure is not None:
        return f"the local model cannot run here: {failure}."
    return None


def local_service(settings: Settings, relevance: Relevance | None = None) -> LocalChatCompletion:
    """The in-process service; the loaded weights are shared by every service on the same file.

    ``relevance`` lets routing call a tool for a message about the tools' subjects (`Relevance`).
    """
    path = settings.resolve(settings.local_model.path)
    engine = load_engine(path, settings.local_model.threads, settings.local_model.context_size)
    return LocalChatCompletion(engine, relevance=relevance, ai_model_id=path.stem, service_id=SERVICE_ID)


def local_execution_settings(settings: Settings, *, seed: int | None = None) -> LocalChatPromptExecutionSettings:
    """Request options for the local model; it samples at the configured chat temperature (Ollama.Temperature)."""
    return LocalChatPromptExecutionSettings(
        service_id=SERVICE_ID,
        temperature=settings.ollama.temperature,
        seed=seed,
    )


async def resolve_provider(settings: Settings, client: ollama.AsyncClient) -> ChatProvider:
    """The provider that will answer: ``ollama`` or ``local`` (``auto`` probes Ollama first).

    Raises:
        ModelUnavailableError: the chosen provider cannot be used; for ``auto``, neither can.
    """
    wanted = settings.chat.provider
    if wanted == ChatProvider.OLLAMA:
        await check_ollama(settings.ollama, client)
        return ChatProvider.OLLAMA
    if wanted == ChatProvider.LOCAL:
        problem = await asyncio.to_thread(local_model_problem, settings)  # may run the self-test's child
        if problem:
            raise ModelUnavailableError(f"Chat.Provider is 'local' but {problem}")
        return ChatProvider.LOCAL
    try:
        await check_ollama(settings.ollama, client)
    except ModelUnavailableError as ollama_problem:
        problem = await asyncio.to_thread(local_model_problem, settings)  # may run the self-test's child
        if problem:
            raise ModelUnavailableError(f"No chat model: {ollama_problem} And {problem}") from ollama_problem
        return ChatProvider.LOCAL
    return ChatProvider.OLLAMA


async def check_chat_model(settings: Settings, client: ollama.AsyncClient) -> str:
    """Describe the chat model that will answer, e.g. ``qwen2.5:7b-instruct at http://…`` or ``local model …``.

    Raises:
        ModelUnavailableError: no configured chat model can be used; the message says how to fix it.
    """
    if await resolve_provider(settings, client) == ChatProvider.LOCAL:
        return f"{settings.resolve(settings.local_model.path).name} (local, in process)"
    return f"{settings.ollama.model_id} at {settings.ollama.host}"


def chat_backend(settings: Settings, client: ollama.AsyncClient, relevance: Relevance | None = None) -> ChatBackend:
    """The service, request options and context size for ``Chat.Provider`` (``relevance``: the local model's)."""
    provider = settings.chat.provider
    if provider == ChatProvider.OLLAMA:
        return ChatBackend(
            ollama_service(settings.ollama, client), ollama_execution_settings(settings.ollama), settings.ollama.num_ctx
        )
    if provider == ChatProvider.LOCAL:
        return ChatBackend(
            local_service(settings, relevance), local_execution_settings(settings), settings.local_model.context_size
        )
    return ChatBackend(
        AutoChatCompletion(
            lambda: resolve_provider(settings, client), lambda p: _fixed_backend(settings, client, p, relevance)
        ),
        PromptExecutionSettings(service_id=SERVICE_ID),
        # Only Ollama truncates prompts silently; the local engine reports its real context.
        settings.ollama.num_ctx,
    )


def _fixed_backend(
    settings: Settings, client: ollama.AsyncClient, provider: ChatProvider, relevance: Relevance | None
) -> ChatBackend:
    fixed = settings.model_copy(update={"chat": settings.chat.model_copy(update={"provider": provider})})
    return chat_backend(fixed, client, relevance)


class AutoChatCompletion(ChatCompletionClientBase):
    """Delegates to the provider chosen on the first request (Ollama if reachable with the model, else local)."""

    _resolve: Callable[[], Any] = PrivateAttr()
    _build: Callable[[ChatProvider], ChatBackend] = PrivateAttr()
    _backend: ChatBackend | None = PrivateAttr(default=None)

    def __init__(self, resolve: Callable[[], Any], build: Callable[[ChatProvider], ChatBackend]) -> None:
        """``resolve()`` is awaited once to pick a provider; ``build(provider)`` makes its backend."""
        super().__init__(ai_model_id="auto", service_id=SERVICE_ID)
        self._resolve = resolve
        self._build = build

    @property
    def chosen(self) -> ChatCompletionClientBase | None:
        """The service of the chosen provider, once the first request chose it."""
        return None if self._backend is None else self._backend.service

    async def backend(self) -> ChatBackend:
        """The chosen backend (probing on first use)."""
        if self._backend is None:
            self._backend = self._build(await self._resolve())
        return self._backend

    async def _delegate(self, settings: PromptExecutionSettings) -> tuple[ChatBackend, PromptExecutionSettings]:
        """The chosen backend, and its own request options with what the turn set per request."""
        backend = await self.backend()
        own = backend.execution_settings.model_copy(deep=True)
        own.function_choice_behavior = settings.function_choice_behavior
        if (schema := response_format(settings)) is not None:
            own = with_response_format(own, schema)
        return backend, own

    async def get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, **kwargs: Any
    ) -> list[ChatMessageContent]:
        """Answer with the chosen provider."""
        backend, own = await self._delegate(settings)
        return await backend.service.get_chat_message_contents(chat_history, own, **kwargs)

    async def get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings, **kwargs: Any
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        """Stream with the chosen provider."""
        backend, own = await self._delegate(settings)
        async for batch in backend.service.get_streaming_chat_message_contents(chat_history, own, **kwargs):
            yield batch
