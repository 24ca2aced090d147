"""A scripted llama.cpp engine at the connector's boundary (`chat.local.llama_engine.CompletionEngine`).

Each completion replays the next scripted step and is recorded, so tests assert exactly what the model was shown;
it runs in the connector's worker thread, as llama.cpp does. A step may be a function of the prompt, for a reply
that depends on what the model was shown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chat.local.service import LocalChatCompletion
    from kernel_setup import AppContext
    from turn.runner import TurnRunner


Step = str | list[str] | Exception | Callable[[str], str]
"""A completion's text (or its pieces), a failure to raise, or a function of the prompt giving the text."""


@dataclass
class ScriptedEngine:
    """Replays scripted completions; records each request; runs in the worker thread like llama.cpp."""

    steps: list[Step]
    context_size: int = 8192
    requests: list[dict[str, Any]] = field(default_factory=list)
    threads: set[int] = field(default_factory=set)

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    def complete(
        self,
        prompt: str,
        *,
        grammar: str | None,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        stop: Sequence[str],
        grammar_tokens: int | None = None,
        hints: Sequence[str] = (),
    ) -> Iterator[str]:
        self.threads.add(threading.get_ident())
        self.requests.append(
            {
                "prompt": prompt,
                "grammar": grammar,
                "temperature": temperature,
                "seed": seed,
                "grammar_tokens": grammar_tokens,
                "stop": list(stop),
                "hints": list(hints),
            }
        )
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if callable(step):
            step = step(prompt)
        yield from [step] if isinstance(step, str) else step


@dataclass
class ScoringEngine(ScriptedEngine):
    """A scripted engine that also reports the first-token log-probability of opening a call (native routing)."""

    scores: list[float] = field(default_factory=list)
    scored: list[str] = field(default_factory=list)

    def tool_start_logprob(self, prompt: str) -> float:
        self.threads.add(threading.get_ident())
        self.scored.append(prompt)
        return self.scores.pop(0)


def local_runner(app: AppContext, model: ScriptedEngine | LocalChatCompletion, **execution: Any) -> TurnRunner:
    """A turn runner on ``app``'s kernel answered by the local connector (over ``model``, when it is an engine)."""
    from chat.local.service import LocalChatCompletion
    from chat.local.settings import LocalChatPromptExecutionSettings
    from turn.runner import TurnRunner
    from turn.sessions import SessionStore

    service = model if isinstance(model, LocalChatCompletion) else LocalChatCompletion(model)
    return TurnRunner(
        app.kernel,
        service,
        app.settings.agent,
        SessionStore(app.db),
        execution_settings=LocalChatPromptExecutionSettings(**execution),
        rejections=app.audit,
        num_ctx=8192,
    )
