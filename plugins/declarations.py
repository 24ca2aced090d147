"""Each kernel function declares once whether it reads or writes; filters, MCP and audit read that.

A function that declares nothing is treated as a destructive, non-idempotent write, so an
undeclared function is never let through as a read by mistake. A write may name a check: a method
of the same plugin, taking the same arguments, that raises what the write would raise for input it
could never carry out (an unknown pump, a summary too short), so the approval gate refuses such a
call at once instead of parking it for a supervisor whose approval could only fail, and returns the
arguments it normalises in canonical form (a trimmed, upper-case id), so one intent is one approval, with the
state the write assumes (`governance.preconditions`), which the write checks again when it runs. The check and
the write call the same validation, so what is parked is what the write accepts.

A write also declares whether it is safety-relevant: whether a mistaken or malicious run could make
people miss a hazard at the plant. For those the four-eyes rule (a supervisor other than the requester
approves) holds even where `Approval.AllowSelfApproval` relaxes it for other writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar, overload

from semantic_kernel.functions.kernel_function import KernelFunction

from governance.effects import Effect
from governance.preconditions import CheckedWrite

_ATTRIBUTE = "__pumpops_traits__"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolTraits:
    """What a function does to the world."""

    effect: Effect
    idempotent: bool
    destructive: bool
    safety_relevant: bool = False
    """A write whose approval must always come from a second person (see the module's docstring)."""
    check: str | None = None
    """A write's check: the name of a method of its plugin (see the module's docstring)."""
    asked_by: tuple[str, ...] = ()
    """A write's request words: a model's call of it in a turn is made only when the operator's message holds one
    (each matched at the start of a word, case folded; ``turn.policies.TurnPolicies.unasked_write``). A read's: the
    words naming what only it answers ("work order"): a turn whose reads left it out, after a message holding one,
    calls it (``turn.policies.TurnPolicies.follow_ups``)."""

    @property
    def read_only(self) -> bool:
        """True for reads."""
        return self.effect is Effect.READ


READ = ToolTraits(effect=Effect.READ, idempotent=True, destructive=False)
UNDECLARED = ToolTraits(effect=Effect.WRITE, idempotent=False, destructive=True, safety_relevant=True)


@overload
def reads(func: F, /) -> F: ...


@overload
def reads(*, asked_by: tuple[str, ...]) -> Callable[[F], F]: ...


def reads(func: F | None = None, /, *, asked_by: tuple[str, ...] = ()) -> F | Callable[[F], F]:
    """Declare a kernel function a read: no side effects, safe to repeat and to run concurrently.

    ``@reads``, or ``@reads(asked_by=(...))`` with the words naming what only this read answers
    (`ToolTraits.asked_by`).
    """
    traits = replace(READ, asked_by=asked_by) if asked_by else READ

    def mark(function: F) -> F:
        setattr(function, _ATTRIBUTE, traits)
        return function

    return mark(func) if func is not None else mark


def writes(
    *,
    idempotent: bool,
    destructive: bool,
    safety_relevant: bool,
    check: str | None = None,
    asked_by: tuple[str, ...] = (),
) -> Callable[[F], F]:
    """Declare a kernel function a write: is a repeat harmless, does it destroy data, is it safety-relevant.

    Every write must say whether it is safety-relevant (its approval always needs a second person).

    ``check`` names the plugin's method that refuses input the write could never carry out (`check_write`);
    ``asked_by`` the words an operator's request for it holds (`ToolTraits.asked_by`).
    """

    def mark(func: F) -> F:
        traits = ToolTraits(
            effect=Effect.WRITE,
            idempotent=idempotent,
            destructive=destructive,
            safety_relevant=safety_relevant,
            check=check,
            asked_by=asked_by,
        )
        setattr(func, _ATTRIBUTE, traits)
        return func

    return mark


def traits_of(function: KernelFunction) -> ToolTraits:
    """The declared traits of a kernel function; undeclared ones count as destructive writes."""
    method = getattr(function, "method", None)
    traits = getattr(method, _ATTRIBUTE, None)
    return traits if isinstance(traits, ToolTraits) else UNDECLARED


async def check_write(function: KernelFunction, arguments: Mapping[str, Any]) -> CheckedWrite:
    """Run the write's declared check: the canonical arguments and the write's preconditions.

    Without a check: the arguments as given, and no preconditions.

    Raises:
        PumpOpsError: whatever the check raises for input the write could never carry out.
        LookupError: the declared check is not a method of the function's plugin (a programming error).
    """
    name = traits_of(function).check
    if name is None:
        return CheckedWrite(dict(arguments))
    plugin = getattr(getattr(function, "method", None), "__self__", None)
    check: Callable[..., Awaitable[CheckedWrite]] | None = getattr(plugin, name, None)
    if check is None:
        raise LookupError(f"{function.fully_qualified_name} declares the check {name!r}, which its plugin lacks.")
    checked = await check(**arguments)
    return CheckedWrite({**arguments, **checked.arguments}, checked.preconditions, checked.refusal)
