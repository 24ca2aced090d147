"""A reading of one pump sensor as a live source hands it on (OPC UA, MQTT)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from twin.models import SensorType


@dataclass(frozen=True, slots=True)
class Reading:
    """One value of one pump sensor at the moment the source says it was measured.

    ``pump_id`` is canonical (``PUMP-007``); ``at`` is timezone-aware UTC, the source's own timestamp (the OPC UA
    source timestamp, the MQTT payload's ``timestamp``), never the time it arrived.
    """

    pump_id: str
    sensor_type: SensorType
    value: float
    at: datetime
    source: str

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            raise ValueError("a reading's time must carry its UTC offset")
        if self.at.tzinfo is not UTC:
            object.__setattr__(self, "at", self.at.astimezone(UTC))
