"""One blocking llama.cpp completion run in a worker thread, its pieces handed to the event loop as they arrive."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from semantic_kernel.connectors.ai.completion_usage import CompletionUsage
from semantic_kernel.exceptions import ServiceResponseException

from chat.local.llama_engine import CompletionEngine
from chat.local.qwen_format import STOP_STRINGS
from chat.local.settings import LocalChatPromptExecutionSettings

__all__ = ["Usage", "generate"]


@dataclass
class Usage:
    """Tokens a model turn read (its prompt) and wrote, counted as the turn goes."""

    prompt: int = 0
    completion: int = 0

    def as_completion_usage(self) -> CompletionUsage:
        """The counts as SK reports them."""
        return CompletionUsage(prompt_tokens=self.prompt, completion_tokens=self.completion)


async def generate(
    engine: CompletionEngine,
    prompt: str,
    grammar: str | None,
    max_tokens: int,
    settings: LocalChatPromptExecutionSettings,
    usage: Usage,
    *,
    grammar_tokens: int | None = None,
    hints: Sequence[str] = (),
) -> AsyncGenerator[str, None]:
    """Run one blocking completion in a worker thread, yielding its pieces as they arrive."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancelled = threading.Event()

    def post(kind: str, value: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    def start() -> Iterator[str]:
        return engine.complete(
            prompt,
            grammar=grammar,
            max_tokens=max_tokens,
            temperature=settings.temperature,
            seed=settings.seed,
            stop=STOP_STRINGS,
            grammar_tokens=grammar_tokens,
            hints=hints,
        )

    worker = asyncio.ensure_future(asyncio.to_thread(_work, start, post, cancelled))
    try:
        while True:
            kind, value = await queue.get()
            if kind == "piece":
                yield value
            elif kind == "error":
                if isinstance(value, ServiceResponseException):
                    raise value
                raise ServiceResponseException(f"The local model failed: {value}") from value
            else:
                usage.completion += int(value)
                break
    finally:
        cancelled.set()
        await worker  # the thread stops after its current token; nothing outlives the call


def _work(start: Callable[[], Iterator[str]], post: Callable[[str, Any], None], cancelled: threading.Event) -> None:
    """The worker thread: post each piece of the completion ``start`` opens, any error, then the number of pieces.

    Stops after the current piece once ``cancelled`` is set, closing the completion.
    """
    pieces = 0
    try:
        stream = start()
        try:
            for piece in stream:
                pieces += 1
                post("piece", piece)
                if cancelled.is_set():
                    break
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
    except Exception as exc:  # handed to the event loop, re-raised there
        post("error", exc)
    finally:
        post("done", pieces)
