"""Approval preconditions: the plant state a parked write assumed, recorded with it and re-checked when it runs.

A write's check (`plugins.declarations.check_write`) validates and normalises its arguments and names the
state the write assumes ("PUMP-007 is in the registry and not decommissioned", "ALM-0003 is active and not
acknowledged", "no open work order for PUMP-007 with this summary"). The approval gate parks the write with
those preconditions; when a supervisor approves it, the write service checks the same state again inside the
transaction that writes, and a state that changed in between refuses the write (`governance.grants.refuse`)
instead of acting on a stale approval: the time-of-check/time-of-use gap is closed where the write happens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.errors import PumpOpsError


class Precondition(BaseModel):
    """One piece of state a parked write assumes: the record it concerns and what must still hold of it."""

    model_config = ConfigDict(frozen=True)
    subject: str
    """The record, in canonical form, e.g. ``PUMP-007`` or ``ALM-0003``."""
    expects: str
    """What must still hold when the write runs, e.g. ``is active and not acknowledged``."""


@dataclass(frozen=True)
class CheckedWrite:
    """A write's arguments in canonical form and the preconditions it assumes, from its declared check.

    ``refusal`` says why the write would be refused now (a precondition that does not hold: an unknown or
    decommissioned pump, an alarm already acknowledged). It is returned, not raised, so the approval gate can
    still find the canonical intent's first result (a replay is answered even when the check would now refuse).
    """

    arguments: Mapping[str, Any]
    preconditions: tuple[Precondition, ...] = field(default=())
    refusal: str | None = None


class PreconditionError(PumpOpsError):
    """The state a write assumes does not hold (at proposal: refused at once; at execution: the approval is refused).

    The message names the record and what changed, e.g. "ALM-0003 was acknowledged by bob at
    2025-06-01T10:00:00+00:00", so the model, the operator and the supervisor can all read it.
    """
