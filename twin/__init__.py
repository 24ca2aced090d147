"""The asset registry (the digital twin's data): pumps, sensors, readings, alarms and maintenance."""

from twin.alarms import AlarmService
from twin.assets import AssetService
from twin.errors import InvalidInputError, NotFoundError, RegistryError
from twin.models import PumpStatus, SensorType, Severity
from twin.sensors import SensorService

__all__ = [
    "AlarmService",
    "AssetService",
    "InvalidInputError",
    "NotFoundError",
    "PumpStatus",
    "RegistryError",
    "SensorService",
    "SensorType",
    "Severity",
]
