"""The local model's request options, its routing decision, and what informs routing (`Relevance`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import Field
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings

__all__ = ["LocalChatPromptExecutionSettings", "Relevance", "Route"]


class Relevance(Protocol):
    """How close an operator's message is to what the tools answer, 0 (unrelated) to 1 (cosine similarity)."""

    async def __call__(self, text: str, tools: Sequence[Mapping[str, Any]]) -> float:
        """The relevance of ``text`` to ``tools`` (as advertised, in the function-calling format)."""
        ...


class LocalChatPromptExecutionSettings(PromptExecutionSettings):
    """Request options for the in-process model."""

    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = None
    max_tokens: int = Field(default=200, ge=1)
    max_call_tokens: int = Field(default=200, ge=16)
    routing: bool = True
    tool_start_threshold: float = Field(default=-1.7, le=0.0)
    relevance_threshold: float = Field(default=0.55, ge=0.0, le=1.0)
    borderline_margin: float = Field(default=0.35, ge=0.0)
    off_topic_relevance: float = Field(default=0.25, ge=0.0, le=1.0)
    route_after_results: bool = False
    tools: list[dict[str, Any]] | None = Field(default=None, exclude=True)
    format: dict[str, Any] | None = Field(default=None, exclude=True)
    """The JSON schema the answer must match (`chat.response_format`): the answer is decoded under its grammar."""


@dataclass(frozen=True)
class Route:
    """Native routing's decision on a turn: whether it opens with a call, and the scores behind it."""

    start: float  # the model's log-probability of opening its turn like a call
    relevance: float | None  # the operator's message against the tools' subjects; measured only near the line
    call: bool
