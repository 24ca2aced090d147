"""Each kernel function declares once whether it reads or writes; filters, MCP and audit read that.

A function that declares nothing is treated as a destructive, non-idempotent write, so an
undeclared function is never let through as a read by mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from semantic_kernel.functions.kernel_function import KernelFunction

_ATTRIBUTE = "__pumpops_traits__"

F = TypeVar("F", bound=Callable[..., Any])


class Effect(str, Enum):
    """Whether a function only reads or changes a record."""

    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class ToolTraits:
    """What a function does to the world."""

    effect: Effect
    idempotent: bool
    destructive: bool

    @property
    def read_only(self) -> bool:
        """True for reads."""
        return self.effect is Effect.READ


READ = ToolTraits(effect=Effect.READ, idempotent=True, destructive=False)
UNDECLARED = ToolTraits(effect=Effect.WRITE, idempotent=False, destructive=True)


def reads(func: F) -> F:
    """Declare a kernel function a read: no side effects, safe to repeat and to run concurrently."""
    setattr(func, _ATTRIBUTE, READ)
    return func


def writes(*, idempotent: bool, destructive: bool) -> Callable[[F], F]:
    """Declare a kernel function a write, saying whether a repeat is harmless and whether it destroys data."""

    def mark(func: F) -> F:
        setattr(func, _ATTRIBUTE, ToolTraits(effect=Effect.WRITE, idempotent=idempotent, destructive=destructive))
        return func

    return mark


def traits_of(function: KernelFunction) -> ToolTraits:
    """The declared traits of a kernel function; undeclared ones count as destructive writes."""
    method = getattr(function, "method", None)
    traits = getattr(method, _ATTRIBUTE, None)
    return traits if isinstance(traits, ToolTraits) else UNDECLARED
