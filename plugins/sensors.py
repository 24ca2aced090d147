"""The `sensors` plugin: latest readings ranked worst first, and trends with a projection."""

from __future__ import annotations

from typing import Annotated

from semantic_kernel.functions import kernel_function

from plugins.declarations import reads
from plugins.results import to_json
from twin import SensorService, SensorType


class SensorsPlugin:
    """Thin kernel-function adapter over `SensorService`."""

    def __init__(self, service: SensorService) -> None:
        self._service = service

    @reads
    @kernel_function(
        name="get_sensor_readings",
        description=(
            "Returns the fleet's latest readings of one sensor type, one per pump, ranked worst first (vibration,"
            " bearing temperature and motor current: highest first; flow and discharge pressure: lowest first), "
            "at most 20, each with its alarm threshold and, for vibration, the ISO 10816-3 zone. Use it for the "
            "fleet's latest readings of one measurement: to rank or compare pumps on it, worst first, or to find "
            "which pumps exceed a value."
        ),
    )
    async def get_sensor_readings(
        self,
        sensor_type: Annotated[SensorType, "The measurement, e.g. 'vibration' (mm/s) or 'bearing_temperature' (°C)."],
        pump_id: Annotated[str | None, "Only this pump, e.g. 'PUMP-004'. Omit for every pump."] = None,
        min_value: Annotated[
            float | None, "Only readings at or above this value in the sensor's unit, e.g. 7.0. Omit for all."
        ] = None,
    ) -> str:
        """Ranked latest readings as JSON."""
        return to_json(
            await self._service.latest_readings(sensor_type=sensor_type, pump_id=pump_id, min_value=min_value)
        )

    @reads
    @kernel_function(
        name="get_sensor_trend",
        description=(
            "Returns min, max, mean and slope per day of one pump's sensor over a window, and the projected date "
            "it crosses the alarm threshold. Use it only for change over time ('is it getting worse?', 'is it "
            "rising?', 'when will it need maintenance?'); for a pump's current values or vibration zone use "
            "assets-get_pump_details. Needs pump id and sensor type."
        ),
    )
    async def get_sensor_trend(
        self,
        pump_id: Annotated[str, "Exact pump identifier, e.g. 'PUMP-007'."],
        sensor_type: Annotated[SensorType, "The measurement, e.g. 'vibration'."],
        days: Annotated[int, "Window length in days, 1-365, e.g. 30 (default)."] = 30,
    ) -> str:
        """Trend statistics and projection as JSON."""
        return to_json(await self._service.trend(pump_id=pump_id, sensor_type=sensor_type, days=days))
