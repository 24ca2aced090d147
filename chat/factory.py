"""Build the chat service from settings, and check that its model is really there."""

from __future__ import annotations

import httpx
import ollama
from semantic_kernel.connectors.ai.ollama.ollama_prompt_execution_settings import OllamaChatPromptExecutionSettings

from chat.ollama.service import HardenedOllamaChatCompletion
from core.errors import PumpOpsError, sentence
from kernel_setup.settings import OllamaSettings


class ModelUnavailableError(PumpOpsError):
    """The configured chat model cannot be used; the message says how to fix it."""


def ollama_service(settings: OllamaSettings, client: ollama.AsyncClient) -> HardenedOllamaChatCompletion:
    """The hardened SK Ollama chat service."""
    return HardenedOllamaChatCompletion(service_id="pumpops-chat", ai_model_id=settings.model_id, client=client)


def ollama_execution_settings(settings: OllamaSettings) -> OllamaChatPromptExecutionSettings:
    """Request options from settings: context size and temperature."""
    return OllamaChatPromptExecutionSettings(
        service_id="pumpops-chat", options={"num_ctx": settings.num_ctx, "temperature": settings.temperature}
    )


async def check_ollama(settings: OllamaSettings, client: ollama.AsyncClient) -> None:
    """Confirm the host answers and has the model.

    Raises:
        ModelUnavailableError: the host is unreachable or lacks the model; the message names both
            and says how to start Ollama or pull the model.
    """
    try:
        listing = await client.list()
    except (httpx.HTTPError, ConnectionError, OSError) as exc:
        raise ModelUnavailableError(
            f"Cannot reach Ollama at {settings.host} ({type(exc).__name__}). Start it with `ollama serve`, or point "
            "Ollama.Host (env PUMPOPS_Ollama__Host) at a running server."
        ) from exc
    except ollama.ResponseError as exc:
        raise ModelUnavailableError(
            f"Ollama at {settings.host} answered with an error: {sentence(str(exc.error))}"
        ) from exc
    names = {m.model for m in listing.models if m.model}
    wanted = settings.model_id
    if wanted not in names and f"{wanted}:latest" not in names:
        available = ", ".join(sorted(names)) or "none"
        raise ModelUnavailableError(
            f"Ollama at {settings.host} has no model {wanted!r} (available: {available}). Pull it with "
            f"`ollama pull {wanted}`, or set Ollama.ModelId (env PUMPOPS_Ollama__ModelId)."
        )
