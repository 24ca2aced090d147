"""The composition root: open the database and services, build the kernel, hand them to the doors.

Nothing here runs at import time; every door (CLI, MCP, tests, an integrator's app) opens an
`AppContext` with `open_app(settings)` and closes it when done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from semantic_kernel import Kernel
from semantic_kernel.filters.filter_types import FilterTypes

from kernel_setup.filters import validate_arguments
from kernel_setup.settings import Settings
from plugins import AlarmsPlugin, AssetsPlugin, SensorsPlugin
from storage import Database
from twin import AlarmService, AssetService, SensorService
from twin.sample_fleet import load_sample_fleet


@dataclass
class AppContext:
    """Everything a door needs, opened once and shared: settings, database, services, kernel."""

    settings: Settings
    db: Database
    assets: AssetService
    alarms: AlarmService
    sensors: SensorService
    kernel: Kernel = field(default_factory=Kernel)


def add_pumpops_plugins(kernel: Kernel, app: AppContext) -> Kernel:
    """Add the PumpOps plugins and the filters that guard them to ``kernel`` (an integrator's own included)."""
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, validate_arguments)
    kernel.add_plugin(AssetsPlugin(app.assets), plugin_name="assets")
    kernel.add_plugin(AlarmsPlugin(app.alarms), plugin_name="alarms")
    kernel.add_plugin(SensorsPlugin(app.sensors), plugin_name="sensors")
    return kernel


def build_kernel(app: AppContext) -> Kernel:
    """A new kernel with the PumpOps plugins."""
    return add_pumpops_plugins(Kernel(), app)


@asynccontextmanager
async def open_app(settings: Settings, *, load_sample: bool = True) -> AsyncIterator[AppContext]:
    """Open the database (created, migrated and, when empty, loaded with the sample fleet) and build the kernel."""
    db = await Database.open(settings.database_path)
    try:
        if load_sample:
            await load_sample_fleet(db)
        app = AppContext(
            settings=settings,
            db=db,
            assets=AssetService(db),
            alarms=AlarmService(db),
            sensors=SensorService(db),
        )
        app.kernel = build_kernel(app)
        yield app
    finally:
        await db.close()
