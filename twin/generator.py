"""Grow the registry with a synthetic fleet for benchmarks: realistic levels, noise and drift.

A few percent of generated pumps drift upward in vibration over the generated window, so trend
questions have answers; alarms are raised where the final readings say they should be, so the
data agrees with its alarms just as the sample fleet does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from storage import Database
from storage.bulk import insert_all
from twin.iso10816 import Zone, assess, boundaries
from twin.models import SENSOR_SPECS, Foundation, SensorType
from twin.sample_fleet_data import AF150, AF400, VT600
from twin.timestamps import format_ts

READING_INTERVAL_HOURS = 6
BATCH_PUMPS = 250
DRIFTING_SHARE = 0.03

ProgressCallback = Callable[[int], None]
_Row = tuple[object, ...]
_Model = tuple[str, float, int, int, float, float, float]  # name, kW, rpm, ISO group, duty flow, pressure, current

_MODELS: tuple[_Model, ...] = (AF400, AF150, VT600)
_SENSORS = tuple(SENSOR_SPECS)


@dataclass(frozen=True)
class GenerationReport:
    """What a generation run added."""

    pumps: int
    sensors: int
    readings: int
    alarms: int
    first_pump_id: str | None
    last_pump_id: str | None
    seconds: float


@dataclass
class _Rows:
    """One batch's rows, one list per table, in insertion order."""

    pumps: list[_Row] = field(default_factory=list)
    sensors: list[_Row] = field(default_factory=list)
    readings: list[_Row] = field(default_factory=list)
    alarms: list[_Row] = field(default_factory=list)


async def generate_fleet(
    db: Database,
    pumps: int,
    readings_per_sensor: int,
    *,
    seed: int = 7,
    now: datetime | None = None,
    progress: ProgressCallback | None = None,
) -> GenerationReport:
    """Add ``pumps`` synthetic pumps, five sensors each, ``readings_per_sensor`` readings per sensor.

    Raises:
        ValueError: a count below 1 (or readings above 100,000).
    """
    if pumps < 1:
        raise ValueError(f"pumps must be at least 1, got {pumps}")
    if not 2 <= readings_per_sensor <= 100_000:
        raise ValueError(f"readings per sensor must be between 2 and 100000, got {readings_per_sensor}")
    started = datetime.now(UTC)
    now = (now or started).replace(minute=0, second=0, microsecond=0)
    rng = np.random.default_rng(seed)
    stamps = [
        format_ts(now - timedelta(hours=READING_INTERVAL_HOURS * (readings_per_sensor - 1 - k)))
        for k in range(readings_per_sensor)
    ]
    next_number = await _next_pump_number(db)
    alarm_number = await _next_alarm_number(db)
    first_id = last_id = None
    alarms = 0
    for batch_start in range(0, pumps, BATCH_PUMPS):
        batch = min(BATCH_PUMPS, pumps - batch_start)
        rows = _batch(rng, next_number + batch_start, batch, stamps, now, alarm_number + alarms)
        alarms += len(rows.alarms)
        first_id = first_id or str(rows.pumps[0][0])
        last_id = str(rows.pumps[-1][0])
        await _insert(db, rows)
        if progress is not None:
            progress(batch)
    return GenerationReport(
        pumps=pumps,
        sensors=pumps * len(_SENSORS),
        readings=pumps * len(_SENSORS) * readings_per_sensor,
        alarms=alarms,
        first_pump_id=first_id,
        last_pump_id=last_id,
        seconds=round((datetime.now(UTC) - started).total_seconds(), 1),
    )


async def _next_pump_number(db: Database) -> int:
    row = await db.fetch_one(db.dialect.max_number_query("pumps", "pump_id", "PUMP-"))
    return (row["n"] or 0) + 1 if row is not None else 1


async def _next_alarm_number(db: Database) -> int:
    row = await db.fetch_one(db.dialect.max_number_query("alarms", "alarm_id", "ALM-"))
    return (row["n"] or 0) + 1 if row is not None else 1


async def _insert(db: Database, rows: _Rows) -> None:
    """Write one batch's rows in one transaction (one statement a table on PostgreSQL)."""
    async with db.transaction() as conn:
        await insert_all(conn, "pumps", _PUMP_COLUMNS, rows.pumps)
        await insert_all(conn, "sensors", _SENSOR_COLUMNS, rows.sensors)
        await insert_all(conn, "readings", ("sensor_id", "recorded_at", "value"), rows.readings)
        await insert_all(conn, "alarms", _ALARM_COLUMNS, [(*alarm, 1) for alarm in rows.alarms])


_PUMP_COLUMNS = (
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
    "last_maintenance_on",
)
_SENSOR_COLUMNS = (
    "sensor_id",
    "pump_id",
    "sensor_type",
    "unit",
    "bad_direction",
    "alarm_threshold",
    "latest_value",
    "latest_at",
)
_ALARM_COLUMNS = ("alarm_id", "pump_id", "sensor_type", "severity", "message", "value", "raised_at", "active")


def _batch(
    rng: np.random.Generator, first_number: int, count: int, stamps: list[str], now: datetime, first_alarm: int
) -> _Rows:
    """The rows of ``count`` generated pumps numbered from ``first_number``, alarms numbered from ``first_alarm``."""
    ramp = np.linspace(0.0, 1.0, len(stamps)) ** 1.6
    rows = _Rows()
    for offset in range(count):
        _add_pump(rows, rng, first_number + offset, stamps, now, ramp, first_alarm)
    return rows


def _add_pump(
    rows: _Rows,
    rng: np.random.Generator,
    number: int,
    stamps: list[str],
    now: datetime,
    ramp: np.ndarray,
    first_alarm: int,
) -> None:
    """One generated pump: its row, then its sensors (`_add_sensors`)."""
    pump_id = f"PUMP-{number:03d}"
    model = _MODELS[int(rng.integers(len(_MODELS)))]
    model_name, power, speed, group, *_ = model
    foundation = Foundation.FLEXIBLE if rng.random() < 0.3 else Foundation.RIGID
    station = f"Station-{_station_name(number)}"
    status = str(rng.choice(["online", "online", "online", "online", "online", "offline", "maintenance"]))
    installed = (now - timedelta(days=int(rng.integers(200, 6000)))).date().isoformat()
    serviced = (now - timedelta(days=int(rng.integers(10, 400)))).date().isoformat()
    rows.pumps.append(
        (
            pump_id,
            f"Pump {number}",
            station,
            model_name,
            power,
            speed,
            group,
            foundation.value,
            status,
            installed,
            serviced,
        )
    )
    _add_sensors(rows, rng, pump_id, model, foundation, stamps, ramp, first_alarm)


def _add_sensors(
    rows: _Rows,
    rng: np.random.Generator,
    pump_id: str,
    model: _Model,
    foundation: Foundation,
    stamps: list[str],
    ramp: np.ndarray,
    first_alarm: int,
) -> None:
    """A generated pump's sensors and readings around levels its model sets, a few drifting; an alarm where due."""
    times = len(stamps)
    _, _, _, group, flow, pressure, current = model
    bc = boundaries(group, foundation)[1]
    drifting = rng.random() < DRIFTING_SHARE
    levels = {
        SensorType.VIBRATION: rng.uniform(0.4, 0.95) * bc,
        SensorType.BEARING_TEMPERATURE: rng.uniform(45.0, 68.0),
        SensorType.FLOW: flow * rng.uniform(0.92, 1.02),
        SensorType.DISCHARGE_PRESSURE: pressure * rng.uniform(0.93, 1.03),
        SensorType.MOTOR_CURRENT: current * rng.uniform(0.9, 1.02),
    }
    thresholds = {
        SensorType.VIBRATION: bc,
        SensorType.BEARING_TEMPERATURE: 85.0,
        SensorType.FLOW: round(flow * 0.85, 1),
        SensorType.DISCHARGE_PRESSURE: round(pressure * 0.85, 2),
        SensorType.MOTOR_CURRENT: round(current * 1.10, 1),
    }
    for sensor_type in _SENSORS:
        spec = SENSOR_SPECS[sensor_type]
        level = levels[sensor_type]
        series = level + rng.normal(0.0, abs(level) * 0.015 + 0.02, times)
        if drifting and sensor_type is SensorType.VIBRATION:
            series = series + ramp * rng.uniform(0.5, 1.4) * bc
        values = np.round(np.maximum(series, 0.0), 2).tolist()
        sensor_id = f"{pump_id}-{sensor_type.value}"
        rows.sensors.append(
            (
                sensor_id,
                pump_id,
                sensor_type.value,
                spec.unit,
                spec.bad_direction.value,
                thresholds[sensor_type],
                values[-1],
                stamps[-1],
            )
        )
        rows.readings.extend(zip([sensor_id] * times, stamps, values, strict=True))
        if sensor_type is SensorType.VIBRATION:
            _add_vibration_alarm(rows, pump_id, values[-1], stamps[-1], group, foundation, first_alarm)


def _add_vibration_alarm(
    rows: _Rows, pump_id: str, value: float, at: str, group: int, foundation: Foundation, first_alarm: int
) -> None:
    """A critical alarm for a last vibration in ISO 10816-3 zone D, a high one for zone C; none below."""
    _, bc, cd = boundaries(group, foundation)
    zone = assess(value, group, foundation).zone
    if zone in (Zone.C, Zone.D):
        severity = "critical" if zone is Zone.D else "high"
        rows.alarms.append(
            (
                f"ALM-{first_alarm + len(rows.alarms):04d}",
                pump_id,
                SensorType.VIBRATION.value,
                severity,
                f"Vibration {value} mm/s r.m.s., ISO 10816-3 zone {zone.value} (B/C {bc}, C/D {cd} mm/s).",
                value,
                at,
            )
        )


def _station_name(number: int) -> str:
    """Stations of 40 pumps each: E, F, ..., Z, then AA, AB, ... (A-D belong to the sample fleet)."""
    index = (number - 1) // 40 + 4
    letters = ""
    while True:
        letters = chr(ord("A") + index % 26) + letters
        index = index // 26 - 1
        if index < 0:
            return letters
