"""A scripted fake Ollama at the process boundary: real Ollama wire format through httpx.MockTransport.

Each `/api/chat` request takes the next scripted step and is recorded, so tests assert exactly
what the model received on every round.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

MODEL = "qwen2.5:7b-instruct"

Step = dict[str, Any] | list[dict[str, Any]] | Callable[[dict[str, Any]], httpx.Response] | httpx.Response


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A tool call as the model would send it."""
    return name, arguments


def reply(
    content: str = "",
    tool_calls: list[tuple[str, Any]] | None = None,
    *,
    done: bool = True,
    prompt_eval_count: int | None = 120,
    eval_count: int | None = 30,
) -> dict[str, Any]:
    """One Ollama chat response chunk."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in tool_calls]
    body: dict[str, Any] = {"model": MODEL, "created_at": "2026-12-01T00:00:00Z", "message": message, "done": done}
    if done:
        body["done_reason"] = "stop"
        if prompt_eval_count is not None:
            body["prompt_eval_count"] = prompt_eval_count
        if eval_count is not None:
            body["eval_count"] = eval_count
    return body


@dataclass
class ScriptedOllama:
    """Replays scripted steps; records every chat request body."""

    steps: list[Step]
    models: list[str] = field(default_factory=lambda: [MODEL])
    requests: list[dict[str, Any]] = field(default_factory=list)

    def transport(self) -> httpx.MockTransport:
        """The transport to hand to `open_app(..., chat_transport=...)`."""
        return httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/tags":
            return httpx.Response(200, json={"models": [{"model": m, "name": m} for m in self.models]})
        assert request.url.path == "/api/chat", request.url.path
        body = json.loads(request.content)
        self.requests.append(body)
        if not self.steps:
            raise AssertionError("the fake Ollama has no scripted reply left")
        step = self.steps.pop(0)
        if isinstance(step, httpx.Response):
            return step
        if callable(step):
            return step(body)
        chunks = step if isinstance(step, list) else [step]
        if body.get("stream"):
            lines = "".join(json.dumps(chunk) + "\n" for chunk in chunks)
            return httpx.Response(200, content=lines.encode(), headers={"content-type": "application/x-ndjson"})
        return httpx.Response(200, json=chunks[-1])

    def tool_messages(self, round_index: int) -> list[dict[str, Any]]:
        """The tool messages the model received on request ``round_index`` (0-based)."""
        return [m for m in self.requests[round_index]["messages"] if m.get("role") == "tool"]
