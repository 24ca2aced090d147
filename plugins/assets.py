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
            "Returns a fleet-wide overview: how many pumps are in each status, active alarm counts by severity "
            "and the single worst pump. Use it for the overall health of the whole fleet, such as 'how is the "
            "system doing?' or 'which pump needs attention?'; not to list pumps and never for one named pump. "
            "Takes no parameters."
        ),
    )
    async def get_system_summary(self) -> str:
        """Fleet summary as JSON."""
        return to_json(await self._service.system_summary())

    @reads
    @kernel_function(
        name="list_pumps",
        description=(
            "Returns pumps (id, name, station, model, status, active alarm count), at most 50, with the total. "
            "Use it to find which pumps are offline, online or in maintenance, which pumps are at a station, or "
            "to find pump ids. Both filters are optional."
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
            "Returns one pump's vibration zone and current condition, by its id: metadata, the latest reading of "
            "every sensor with its alarm threshold, active alarms and the ISO 10816-3 vibration zone. Use it "
            "whenever the operator names a pump id and asks about its state, current readings, alarms or "
            "vibration zone."
        ),
    )
    async def get_pump_details(self, pump_id: Annotated[str, "Exact pump identifier, e.g. 'PUMP-007'."]) -> str:
        """One pump's details as JSON."""
        return to_json(await self._service.pump_details(pump_id))
