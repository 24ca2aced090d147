"""Grow the registry with a synthetic fleet for benchmarks: realistic levels, noise and drift.

A few percent of generated pumps drift upward in vibration over the generated window, so trend
questions have answers; alarms are raised where the final readings say they should be, so the
data agrees with its alarms just as the sample fleet does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from storage import Database
from twin.iso10816 import Zone, assess, boundaries
from twin.models import SENSOR_SPECS, Foundation, SensorType
from twin.sample_fleet import format_ts
from twin.sample_fleet_data import AF150, AF400, VT600

READING_INTERVAL_HOURS = 6
BATCH_PUMPS = 250
DRIFTING_SHARE = 0.03

ProgressCallback = Callable[[int], None]

_MODELS = (AF400, AF150, VT600)
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
        pump_rows, sensor_rows, reading_rows, alarm_rows = _batch(
            rng, next_number + batch_start, batch, stamps, now, alarm_number + alarms
        )
        alarms += len(alarm_rows)
        first_id = first_id or str(pump_rows[0][0])
        last_id = str(pump_rows[-1][0])
        async with db.transaction() as conn:
            await conn.executemany(
                "INSERT INTO pumps (pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, "
                "foundation, status, installed_on, last_maintenance_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                pump_rows,
            )
            await conn.executemany(
                "INSERT INTO sensors (sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold, "
                "latest_value, latest_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                sensor_rows,
            )
            await conn.executemany(
                "INSERT INTO readings (sensor_id, recorded_at, value) VALUES (?, ?, ?)", reading_rows
            )
            await conn.executemany(
                "INSERT INTO alarms (alarm_id, pump_id, sensor_type, severity, message, value, raised_at, active) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                alarm_rows,
            )
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
    row = await db.fetch_one(
        "SELECT MAX(CAST(substr(pump_id, 6) AS INTEGER)) AS n FROM pumps WHERE pump_id GLOB 'PUMP-[0-9]*'"
    )
    return (row["n"] or 0) + 1 if row is not None else 1


async def _next_alarm_number(db: Database) -> int:
    row = await db.fetch_one(
        "SELECT MAX(CAST(substr(alarm_id, 5) AS INTEGER)) AS n FROM alarms WHERE alarm_id GLOB 'ALM-[0-9]*'"
    )
    return (row["n"] or 0) + 1 if row is not None else 1


def _batch(
    rng: np.random.Generator, first_number: int, count: int, stamps: list[str], now: datetime, first_alarm: int
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[tuple[object, ...]], list[tuple[object, ...]]]:
    times = len(stamps)
    ramp = np.linspace(0.0, 1.0, times) ** 1.6
    pump_rows: list[tuple[object, ...]] = []
    sensor_rows: list[tuple[object, ...]] = []
    reading_rows: list[tuple[object, ...]] = []
    alarm_rows: list[tuple[object, ...]] = []
    for offset in range(count):
        number = first_number + offset
        pump_id = f"PUMP-{number:03d}"
        model_name, power, speed, group, flow, pressure, current = _MODELS[int(rng.integers(len(_MODELS)))]
        foundation = Foundation.FLEXIBLE if rng.random() < 0.3 else Foundation.RIGID
        station = f"Station-{_station_name(number)}"
        status = str(rng.choice(["online", "online", "online", "online", "online", "offline", "maintenance"]))
        installed = (now - timedelta(days=int(rng.integers(200, 6000)))).date().isoformat()
        serviced = (now - timedelta(days=int(rng.integers(10, 400)))).date().isoformat()
        pump_rows.append(
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
        _, bc, cd = boundaries(group, foundation)
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
            sensor_rows.append(
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
            reading_rows.extend(zip([sensor_id] * times, stamps, values, strict=True))
            if sensor_type is SensorType.VIBRATION:
                zone = assess(values[-1], group, foundation).zone
                if zone in (Zone.C, Zone.D):
                    severity = "critical" if zone is Zone.D else "high"
                    alarm_rows.append(
                        (
                            f"ALM-{first_alarm + len(alarm_rows):04d}",
                            pump_id,
                            sensor_type.value,
                            severity,
                            f"Vibration {values[-1]} mm/s r.m.s., ISO 10816-3 zone {zone.value} "
                            f"(B/C {bc}, C/D {cd} mm/s).",
                            values[-1],
                            stamps[-1],
                        )
                    )
    return pump_rows, sensor_rows, reading_rows, alarm_rows


def _station_name(number: int) -> str:
    """Stations of 40 pumps each: E, F, ..., Z, then AA, AB, ... (A-D belong to the sample fleet)."""
    index = (number - 1) // 40 + 4
    letters = ""
    while True:
        letters = chr(ord("A") + index % 26) + letters
        index = index // 26 - 1
        if index < 0:
            return letters
