"""ISO 10816-3 vibration severity zones (same zones in ISO 20816-3:2022), computed in code."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict

from twin.models import Foundation


class Zone(str, Enum):
    """Evaluation zones A (new) … D (damage likely)."""

    A = "A"
    B = "B"
    C = "C"
    D = "D"


ZONE_MEANING: dict[Zone, str] = {
    Zone.A: "newly commissioned condition",
    Zone.B: "acceptable for unrestricted long-term operation",
    Zone.C: "unsatisfactory for long-term operation; run only until remedial action",
    Zone.D: "severe enough to cause damage",
}

# (A/B, B/C, C/D) boundaries in mm/s r.m.s., by machine group and foundation.
_BOUNDARIES: dict[tuple[int, Foundation], tuple[float, float, float]] = {
    (1, Foundation.RIGID): (2.3, 4.5, 7.1),
    (1, Foundation.FLEXIBLE): (3.5, 7.1, 11.0),
    (2, Foundation.RIGID): (1.4, 2.8, 4.5),
    (2, Foundation.FLEXIBLE): (2.3, 4.5, 7.1),
}


class ZoneAssessment(BaseModel):
    """A vibration value placed in its ISO 10816-3 zone."""

    model_config = ConfigDict(frozen=True)
    zone: Zone
    meaning: str
    value_mm_s: float
    machine_group: int
    foundation: Foundation
    boundaries_mm_s: dict[str, float]


def boundaries(machine_group: int, foundation: Foundation) -> tuple[float, float, float]:
    """Return the (A/B, B/C, C/D) boundaries for a machine class.

    Raises:
        ValueError: the group is not 1 or 2.
    """
    try:
        return _BOUNDARIES[(machine_group, foundation)]
    except KeyError as exc:
        raise ValueError(f"ISO 10816-3 machine group must be 1 or 2, got {machine_group!r}") from exc


def assess(value_mm_s: float, machine_group: int, foundation: Foundation) -> ZoneAssessment:
    """Place a broadband r.m.s. velocity reading in its zone (a value on a boundary takes the upper zone)."""
    ab, bc, cd = boundaries(machine_group, foundation)
    if value_mm_s < ab:
        zone = Zone.A
    elif value_mm_s < bc:
        zone = Zone.B
    elif value_mm_s < cd:
        zone = Zone.C
    else:
        zone = Zone.D
    return ZoneAssessment(
        zone=zone,
        meaning=ZONE_MEANING[zone],
        value_mm_s=value_mm_s,
        machine_group=machine_group,
        foundation=foundation,
        boundaries_mm_s={"A/B": ab, "B/C": bc, "C/D": cd},
    )
