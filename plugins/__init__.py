"""Kernel plugins: thin `@kernel_function` adapters over the domain services, one file per plugin."""

from plugins.alarms import AlarmsPlugin
from plugins.assets import AssetsPlugin
from plugins.declarations import Effect, ToolTraits, reads, traits_of, writes
from plugins.docs import DocsPlugin
from plugins.sensors import SensorsPlugin

__all__ = [
    "AlarmsPlugin",
    "AssetsPlugin",
    "DocsPlugin",
    "Effect",
    "SensorsPlugin",
    "ToolTraits",
    "reads",
    "traits_of",
    "writes",
]
