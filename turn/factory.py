"""A turn runner for an opened app, on the chat model its settings choose (`Chat.Provider`)."""

from __future__ import annotations

from chat.provider import chat_backend, check_chat_model
from chat.relevance import DomainRelevance
from kernel_setup.app import AppContext
from turn.runner import TurnRunner
from turn.sessions import SessionStore


def runner_for(app: AppContext) -> TurnRunner:
    """A turn runner on ``app``'s kernel and the chat model chosen by `Chat.Provider` (ollama, local or auto)."""
    backend = chat_backend(app.settings, app.chat_client, DomainRelevance(app.manuals))
    return TurnRunner(
        app.kernel,
        backend.service,
        app.settings.agent,
        SessionStore(app.db),
        execution_settings=backend.execution_settings,
        rejections=app.audit,
        num_ctx=backend.num_ctx,
        tracing=app.tracing,
    )


async def check_model(app: AppContext) -> str:
    """Describe the chat model that will answer; raise `ModelUnavailableError` with instructions if none can."""
    return await check_chat_model(app.settings, app.chat_client)
