"""Importing a plant from the files a site already has: pumps, sensors, readings, alarms, maintenance history.

`import_plant` reads a folder of CSV or JSON Lines files (one per record kind, docs/plant-import.md), checks every
row, and writes each file in one transaction matched on natural keys, so importing the same files again changes
nothing.
"""

from twin.importing.errors import PlantImportError
from twin.importing.records import Problem
from twin.importing.run import FileReport, ImportProgress, ImportReport, import_plant, site_zone
from twin.importing.sources import RecordKind

__all__ = [
    "FileReport",
    "ImportProgress",
    "ImportReport",
    "PlantImportError",
    "Problem",
    "RecordKind",
    "import_plant",
    "site_zone",
]
