"""Domain types of the asset registry: closed sets as enums, records as frozen pydantic models."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict


class PumpStatus(str, Enum):
    """Operational status of a pump."""

    ONLINE = "online"
    OFFLINE = "offline"
    MAINTENANCE = "maintenance"


class Severity(str, Enum):
    """Alarm severity, lowest first."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """1 for low … 4 for critical."""
        return list(Severity).index(self) + 1


class SensorType(str, Enum):
    """The kinds of sensor every pump carries."""

    VIBRATION = "vibration"
    BEARING_TEMPERATURE = "bearing_temperature"
    FLOW = "flow"
    DISCHARGE_PRESSURE = "discharge_pressure"
    MOTOR_CURRENT = "motor_current"


class BadDirection(str, Enum):
    """Which way a reading moves when things get worse."""

    HIGH = "high"
    LOW = "low"


class Foundation(str, Enum):
    """Machine support, per ISO 10816-3."""

    RIGID = "rigid"
    FLEXIBLE = "flexible"


class SensorSpec(BaseModel):
    """What a sensor type measures and which way is bad."""

    model_config = ConfigDict(frozen=True)
    sensor_type: SensorType
    unit: str
    bad_direction: BadDirection


SENSOR_SPECS: dict[SensorType, SensorSpec] = {
    SensorType.VIBRATION: SensorSpec(sensor_type=SensorType.VIBRATION, unit="mm/s", bad_direction=BadDirection.HIGH),
    SensorType.BEARING_TEMPERATURE: SensorSpec(
        sensor_type=SensorType.BEARING_TEMPERATURE, unit="°C", bad_direction=BadDirection.HIGH
    ),
    SensorType.FLOW: SensorSpec(sensor_type=SensorType.FLOW, unit="m³/h", bad_direction=BadDirection.LOW),
    SensorType.DISCHARGE_PRESSURE: SensorSpec(
        sensor_type=SensorType.DISCHARGE_PRESSURE, unit="bar", bad_direction=BadDirection.LOW
    ),
    SensorType.MOTOR_CURRENT: SensorSpec(
        sensor_type=SensorType.MOTOR_CURRENT, unit="A", bad_direction=BadDirection.HIGH
    ),
}
