"""The `assets` plugin: the fleet summary, pump lists and one pump in full."""

from __future__ import annotations

from typing import Annotated

from semantic_kernel.functions import kernel_function

from plugins.declarations import reads
from plugins.results import to_json
from twin import AssetService, PumpStatus


class AssetsPlugin:
    """Thin kernel-function adapter over `AssetService`."""

    def __init__(self, service: AssetService) -> None:
        self._service = service

    @reads
    @kernel_function(
        name="get_system_summary",
        description=(
            "Returns fleet-wide pump counts by status, active alarm counts by severity and the single worst pump "
            "(highest active alarm severity, then highest vibration). Call this first for general health questions "
            "such as 'how is the system doing?' or 'which pump needs attention?'. Takes no parameters."
        ),
    )
    async def get_system_summary(self) -> str:
        """Fleet summary as JSON."""
        return to_json(await self._service.system_summary())

    @reads
    @kernel_function(
        name="list_pumps",
        description=(
            "Returns pumps (id, name, station, model, status, active alarm count), at most 50, with the total "
            "count and a truncated flag. Use it to find pump ids or to count pumps by status or station. "
            "Both filters are optional; omit them to list every pump."
        ),
    )
    async def list_pumps(
        self,
        status: Annotated[
            PumpStatus | None, "Only pumps with this operational status, e.g. 'online'. Omit for all statuses."
        ] = None,
        location: Annotated[
            str | None, "Only pumps at this station (case-insensitive match), e.g. 'Station-C'. Omit for all."
        ] = None,
    ) -> str:
        """Filtered pump list as JSON."""
        return to_json(await self._service.list_pumps(status=status, location=location))

    @reads
    @kernel_function(
        name="get_pump_details",
        description=(
            "Returns everything about one pump in one call: metadata, machine group and foundation, the latest "
            "reading of every sensor with its alarm threshold, active alarms, and the ISO 10816-3 vibration zone "
            "computed from the pump's class. Use it for any question about a specific pump's condition. "
            "Needs the exact pump id."
        ),
    )
    async def get_pump_details(self, pump_id: Annotated[str, "Exact pump identifier, e.g. 'PUMP-007'."]) -> str:
        """One pump's details as JSON."""
        return to_json(await self._service.pump_details(pump_id))
