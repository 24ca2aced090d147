"""Run the golden questions against a chat model: each trial of each item in a fresh session on a throwaway database.

A template database with the sample fleet is built once in a temporary folder; every question
runs on a fresh copy of it (so writes parked during the evaluation pollute nothing, and the facts
the items expect are those of the sample fleet). The manuals index is the configured one, read
only. The chat service is created once per run, so the local model loads once; trial ``t`` samples
with seed ``base_seed + t`` at the given temperature. Latencies are of warm turns: one unscored
greeting runs first (the model loads; the local model reads the system prompt and tool list, which
it then keeps cached), and its time is reported apart as the cold start. With the local model, llama.cpp's raw
reading and writing rates are measured before the first trial and after the last (`measure_rates`, as the
bench measures them: about 20 s each on 2 cores): the latencies depend on the machine's speed at the time,
and this says what it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.ollama.ollama_prompt_execution_settings import OllamaChatPromptExecutionSettings
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings

from chat.factory import ollama_service
from chat.local.llama_engine import measure_rates
from chat.provider import local_execution_settings, local_service, resolve_provider
from chat.relevance import DomainRelevance
from core.errors import PumpOpsError
from evaluation.questions import GoldenItem
from evaluation.scorer import MachineRates, Transcript
from kernel_setup.app import AppContext, ollama_client, open_app
from kernel_setup.manuals import document_index
from kernel_setup.settings import ChatProvider, DatabaseSettings, Settings
from memory import DocumentIndex
from turn.errors import ChatServiceError
from turn.runner import TurnRunner
from turn.sessions import SessionStore

__all__ = ["EvalRun", "run_eval", "throwaway_settings"]

OnTrial = Callable[[GoldenItem, Transcript], None]

WARMUP_QUESTION = "Hello."


@dataclass(frozen=True)
class EvalRun:
    """What `run_eval` produced: the provider, every trial's transcript, the cold start's seconds, the machine's rates.

    ``machine_rates``: llama.cpp's before and after the trials, with the local model only.
    """

    provider: ChatProvider
    transcripts: list[Transcript]
    warmup_s: float | None
    machine_rates: list[MachineRates] = field(default_factory=list)


def throwaway_settings(settings: Settings, database: Path, provider: ChatProvider, temperature: float) -> Settings:
    """A clone of ``settings`` on another database file, with the provider and temperature fixed."""
    clone = settings.model_copy(
        update={
            "database": DatabaseSettings(path=str(database)),
            "chat": settings.chat.model_copy(update={"provider": provider}),
            "ollama": settings.ollama.model_copy(update={"temperature": temperature}),
        }
    )
    clone._base_dir = settings.base_dir
    clone._source = settings.source
    return clone


def _execution_settings(settings: Settings, provider: ChatProvider, seed: int | None) -> PromptExecutionSettings:
    if provider == ChatProvider.LOCAL:
        return local_execution_settings(settings, seed=seed)
    options: dict[str, object] = {"num_ctx": settings.ollama.num_ctx, "temperature": settings.ollama.temperature}
    if seed is not None:
        options["seed"] = seed
    return OllamaChatPromptExecutionSettings(service_id="pumpops-chat", options=options)


async def run_eval(
    settings: Settings,
    items: Sequence[GoldenItem],
    *,
    k: int,
    temperature: float,
    provider: ChatProvider | None = None,
    base_seed: int = 1,
    on_trial: OnTrial | None = None,
) -> EvalRun:
    """Run ``k`` trials of every item after one unscored warm-up turn.

    Raises:
        ModelUnavailableError: the chosen provider (or, for auto, any) cannot be used.
    """
    wanted = settings
    if provider is not None:
        wanted = settings.model_copy(update={"chat": settings.chat.model_copy(update={"provider": provider})})
    chosen = await resolve_provider(wanted, ollama_client(settings.ollama))
    transcripts: list[Transcript] = []
    # One manuals index for the run (one open index per local Qdrant folder): every item's app searches
    # it and the shared local service's routing measures relevance with it.
    async with document_index(settings) as manuals:
        with tempfile.TemporaryDirectory(prefix="pumpops-eval-") as folder:
            workdir = Path(folder)
            template = workdir / "template.db"
            async with open_app(throwaway_settings(settings, template, chosen, temperature), manuals=manuals):
                pass  # created, migrated and loaded with the sample fleet
            shared: ChatCompletionClientBase | None = None
            if chosen == ChatProvider.LOCAL:
                shared = local_service(settings, DomainRelevance(manuals))
            fresh = functools.partial(_fresh_runner, settings, template, chosen, temperature, shared, manuals)
            warmup_s = await _warm_up(fresh) if items else None
            rates: list[MachineRates] = []
            if chosen == ChatProvider.LOCAL and items:
                rates.append(await _machine_rates(settings, "before"))
            for trial in range(k):
                seed = base_seed + trial
                for item in items:
                    async with fresh(f"{item.id}-{trial}.db", seed) as runner:
                        transcript = await _run_item(runner, item, trial, seed)
                    transcripts.append(transcript)
                    if on_trial is not None:
                        on_trial(item, transcript)
            if rates:
                rates.append(await _machine_rates(settings, "after"))
    return EvalRun(provider=chosen, transcripts=transcripts, warmup_s=warmup_s, machine_rates=rates)


async def _machine_rates(settings: Settings, when: Literal["before", "after"]) -> MachineRates:
    """The local model's raw llama.cpp rates on this machine now (`measure_rates`)."""
    read, write = await asyncio.to_thread(
        measure_rates, settings.resolve(settings.local_model.path), settings.local_model.threads
    )
    return MachineRates(when=when, prompt_tokens_per_s=round(read, 1), written_tokens_per_s=round(write, 1))


@contextlib.asynccontextmanager
async def _fresh_runner(
    settings: Settings,
    template: Path,
    chosen: ChatProvider,
    temperature: float,
    shared: ChatCompletionClientBase | None,
    manuals: DocumentIndex,
    name: str,
    seed: int | None,
) -> AsyncIterator[TurnRunner]:
    """A runner on a fresh copy ``name`` of the template database, removed afterwards."""
    database = template.with_name(name)
    await asyncio.to_thread(shutil.copyfile, template, database)
    try:
        run_settings = throwaway_settings(settings, database, chosen, temperature)
        async with open_app(run_settings, load_sample=False, manuals=manuals) as app:
            service = shared or ollama_service(run_settings.ollama, app.chat_client)
            yield _runner(app, service, _execution_settings(run_settings, chosen, seed), chosen)
    finally:
        await asyncio.to_thread(_remove_database, database)


async def _warm_up(fresh: Callable[[str, int | None], AbstractAsyncContextManager[TurnRunner]]) -> float | None:
    """One unscored turn; its seconds, or None when it failed (the trials will say why)."""
    started = time.perf_counter()
    try:
        async with fresh("warmup.db", None) as runner:
            await runner.run(WARMUP_QUESTION, principal="eval")
    except (ChatServiceError, PumpOpsError):
        return None
    return round(time.perf_counter() - started, 2)


def _remove_database(database: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)


def _runner(
    app: AppContext, service: ChatCompletionClientBase, execution: PromptExecutionSettings, provider: ChatProvider
) -> TurnRunner:
    settings = app.settings
    num_ctx = settings.local_model.context_size if provider == ChatProvider.LOCAL else settings.ollama.num_ctx
    return TurnRunner(
        app.kernel,
        service,
        settings.agent,
        SessionStore(app.db),
        execution_settings=execution,
        rejections=app.audit,
        num_ctx=num_ctx,
    )


async def _run_item(runner: TurnRunner, item: GoldenItem, trial: int, seed: int) -> Transcript:
    try:
        session: str | None = None
        for earlier in item.setup:
            session = (await runner.run(earlier, session=session, principal="eval")).session
        started = time.perf_counter()
        result = await runner.run(item.question, session=session, principal="eval")
        return Transcript(
            item_id=item.id, trial=trial, seed=seed, result=result, latency_s=time.perf_counter() - started
        )
    except (ChatServiceError, PumpOpsError) as exc:
        return Transcript(item_id=item.id, trial=trial, seed=seed, error=str(exc))
