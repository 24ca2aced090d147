"""The column contract of each record kind, and one raw row read as the values the registry stores.

See docs/plant-import.md for the contract as users read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import tzinfo
from enum import Enum
from typing import Any

from twin.importing import fields as f
from twin.importing.errors import BadValueError
from twin.importing.sources import RecordKind
from twin.models import SENSOR_SPECS, BadDirection, Foundation, PumpStatus, SensorType, Severity
from twin.work_orders import MAX_SUMMARY, MIN_SUMMARY, Priority, WorkOrderStatus

Record = tuple[Any, ...]


class MaintenanceKind(str, Enum):
    """What a maintenance record was."""

    PREVENTIVE = "preventive"
    CORRECTIVE = "corrective"
    INSPECTION = "inspection"


@dataclass(frozen=True)
class KindSpec:
    """A record kind's columns, how a row becomes a record, and the natural key no two rows may share."""

    columns: tuple[str, ...]
    parse: Callable[[dict[str, Any], tzinfo | None], Record]
    key: Callable[[Record], tuple[Any, ...]]


def _pump(row: dict[str, Any], _zone: tzinfo | None) -> Record:
    """(pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, foundation, status, installed_on)."""
    power = f.number(row, "power_kw")
    assert power is not None
    if power <= 0:
        raise BadValueError(f"power_kw must be above 0, got {row.get('power_kw')!r}")
    return (
        f.pump_id(row),
        f.required(row, "name"),
        f.required(row, "location"),
        f.required(row, "model"),
        power,
        f.whole(row, "rated_speed_rpm"),
        f.whole(row, "machine_group", allowed=(1, 2)),
        f.choice(row, "foundation", Foundation).value,
        f.choice(row, "status", PumpStatus).value,
        f.day(row, "installed_on"),
    )


def _sensor(row: dict[str, Any], _zone: tzinfo | None) -> Record:
    """(pump_id, sensor_type, unit, bad_direction, alarm_threshold)."""
    sensor_type = f.choice(row, "sensor_type", SensorType)
    spec = SENSOR_SPECS[sensor_type]
    direction = f.choice(row, "bad_direction", BadDirection, default=spec.bad_direction)
    if direction is not spec.bad_direction:
        raise BadValueError(
            f"bad_direction {direction.value!r} for {sensor_type.value}: the registry ranks {sensor_type.value} "
            f"as bad when {spec.bad_direction.value}"
        )
    return (
        f.pump_id(row),
        sensor_type.value,
        f.unit(row, sensor_type),
        direction.value,
        f.number(row, "alarm_threshold"),
    )


def _alarm(row: dict[str, Any], zone: tzinfo | None) -> Record:
    """(alarm_id, pump_id, sensor_type, severity, message, value, raised_at, active, cleared_at)."""
    sensor_type = f.text(row, "sensor_type", required=False)
    raised = f.timestamp(row, "raised_at", zone)
    cleared = f.timestamp(row, "cleared_at", zone, optional=True)
    if cleared is not None and raised is not None and cleared < raised:
        raise BadValueError(f"cleared_at {row.get('cleared_at')!r} is before raised_at {row.get('raised_at')!r}")
    return (
        f.alarm_id(row),
        f.pump_id(row),
        None if sensor_type is None else f.choice(row, "sensor_type", SensorType).value,
        f.choice(row, "severity", Severity).value,
        f.required(row, "message"),
        f.number(row, "value", optional=True),
        raised,
        1 if cleared is None else 0,
        cleared,
    )


def _maintenance(row: dict[str, Any], _zone: tzinfo | None) -> Record:
    """(pump_id, performed_on, kind, description, technician)."""
    return (
        f.pump_id(row),
        f.day(row, "performed_on"),
        f.choice(row, "kind", MaintenanceKind).value,
        f.required(row, "description"),
        f.text(row, "technician", required=False),
    )


def _work_order(row: dict[str, Any], zone: tzinfo | None) -> Record:
    """(work_order_id, pump_id, priority, summary, status, created_at, requested_by, approved_by)."""
    summary = f.required(row, "summary")
    if not MIN_SUMMARY <= len(summary) <= MAX_SUMMARY:
        raise BadValueError(
            f"summary is {len(summary)} characters long; {MIN_SUMMARY} to {MAX_SUMMARY} describing the work"
        )
    return (
        f.work_order_id(row),
        f.pump_id(row),
        f.choice(row, "priority", Priority).value,
        summary,
        f.choice(row, "status", WorkOrderStatus).value,
        f.timestamp(row, "created_at", zone),
        f.required(row, "requested_by"),
        f.text(row, "approved_by", required=False),
    )


READING_COLUMNS = ("pump_id", "sensor_type", "recorded_at", "value", "unit")
# Readings are checked by twin/importing/checking.py's fast path (`ReadingChecker`), the others through `SPECS`.
SPECS: dict[RecordKind, KindSpec] = {
    RecordKind.PUMPS: KindSpec(
        (
            "pump_id",
            "name",
            "location",
            "model",
            "power_kw",
            "rated_speed_rpm",
            "machine_group",
            "foundation",
            "status",
            "installed_on",
        ),
        _pump,
        lambda r: r[:1],
    ),
    RecordKind.SENSORS: KindSpec(
        ("pump_id", "sensor_type", "unit", "alarm_threshold", "bad_direction"), _sensor, lambda r: r[:2]
    ),
    RecordKind.ALARMS: KindSpec(
        ("alarm_id", "pump_id", "sensor_type", "severity", "message", "value", "raised_at", "cleared_at"),
        _alarm,
        lambda r: r[:1],
    ),
    RecordKind.MAINTENANCE: KindSpec(
        ("pump_id", "performed_on", "kind", "description", "technician"), _maintenance, lambda r: r[:4]
    ),
    RecordKind.WORK_ORDERS: KindSpec(
        ("work_order_id", "pump_id", "priority", "summary", "status", "created_at", "requested_by", "approved_by"),
        _work_order,
        lambda r: r[:1],
    ),
}


@dataclass(frozen=True)
class Problem:
    """A row refused: the line it starts on and why."""

    line: int
    reason: str
