"""Loading the sample fleet PumpOps ships (`twin.sample_fleet_data`) into an empty registry.

Every sensor gets a reading history of `HISTORY_DAYS` days, one reading every `READING_INTERVAL_HOURS` hours,
ending exactly at the pump's latest value; alarms are raised relative to the load time.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

from storage import Connection, Database
from twin.iso10816 import boundaries
from twin.models import SENSOR_SPECS, SensorType
from twin.sample_fleet_data import SAMPLE_ALARMS, SAMPLE_MAINTENANCE, SAMPLE_PUMPS, AlarmSpec, PumpSpec
from twin.timestamps import format_ts

HISTORY_DAYS = 90
READING_INTERVAL_HOURS = 6


def alarm_threshold(spec: PumpSpec, sensor_type: SensorType) -> float:
    """The alarm threshold for one of a pump's sensors.

    Vibration alarms at the ISO 10816-3 B/C boundary of the pump's class; bearing temperature at
    85 °C; flow and discharge pressure 15 % below the duty point; motor current 10 % above rating.
    """
    if sensor_type is SensorType.VIBRATION:
        return boundaries(spec.machine_group, spec.foundation)[1]
    if sensor_type is SensorType.BEARING_TEMPERATURE:
        return 85.0
    if sensor_type is SensorType.FLOW:
        return round(spec.duty_flow_m3h * 0.85, 1)
    if sensor_type is SensorType.DISCHARGE_PRESSURE:
        return round(spec.duty_pressure_bar * 0.85, 2)
    return round(spec.rated_current_a * 1.10, 1)


def _series(spec: PumpSpec, sensor_type: SensorType, times: int, rng: random.Random) -> list[float]:
    """A reading history ending exactly at the pump's latest value, drifting from its start where it has one."""
    end = spec.latest[sensor_type]
    start = spec.starts.get(sensor_type, end)
    values = []
    for k in range(times):
        fraction = k / (times - 1)
        # Drift accelerates towards the end, as wear does.
        base = start + (end - start) * fraction**1.6
        noise = 0.0 if k == times - 1 else rng.gauss(0.0, abs(end) * 0.015 + 0.02)
        daily = 0.01 * abs(end) * math.sin(2 * math.pi * k * READING_INTERVAL_HOURS / 24)
        values.append(round(base + noise + (0.0 if k == times - 1 else daily), 2))
    return values


async def load_sample_fleet(db: Database, now: datetime | None = None) -> bool:
    """Load the sample fleet if the registry is empty; return whether anything was loaded."""
    existing = await db.fetch_one("SELECT COUNT(*) AS n FROM pumps")
    if existing is not None and existing["n"] > 0:
        return False
    now = (now or datetime.now(UTC)).replace(minute=0, second=0, microsecond=0)
    rng = random.Random(20261202)
    times = HISTORY_DAYS * 24 // READING_INTERVAL_HOURS + 1
    stamps = [format_ts(now - timedelta(hours=READING_INTERVAL_HOURS * (times - 1 - k))) for k in range(times)]
    async with db.transaction() as conn:
        for spec in SAMPLE_PUMPS:
            await _insert_pump(conn, spec, stamps, rng)
        for alarm in SAMPLE_ALARMS:
            await _insert_alarm(conn, alarm, now)
        await conn.executemany(
            "INSERT INTO maintenance_records (pump_id, performed_on, kind, description, technician) "
            "VALUES (?, ?, ?, ?, ?)",
            SAMPLE_MAINTENANCE,
        )
    return True


async def _insert_pump(conn: Connection, spec: PumpSpec, stamps: list[str], rng: random.Random) -> None:
    """One pump, its sensors and their reading histories (one reading per stamp)."""
    await conn.execute(
        "INSERT INTO pumps (pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, "
        "foundation, status, installed_on, last_maintenance_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            spec.pump_id,
            spec.name,
            spec.location,
            spec.model,
            spec.power_kw,
            spec.rated_speed_rpm,
            spec.machine_group,
            spec.foundation.value,
            spec.status,
            spec.installed_on,
            spec.last_maintenance_on,
        ),
    )
    for sensor_type, sensor_spec in SENSOR_SPECS.items():
        sensor_id = f"{spec.pump_id}-{sensor_type.value}"
        values = _series(spec, sensor_type, len(stamps), rng)
        await conn.execute(
            "INSERT INTO sensors (sensor_id, pump_id, sensor_type, unit, bad_direction, alarm_threshold, "
            "latest_value, latest_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sensor_id,
                spec.pump_id,
                sensor_type.value,
                sensor_spec.unit,
                sensor_spec.bad_direction.value,
                alarm_threshold(spec, sensor_type),
                values[-1],
                stamps[-1],
            ),
        )
        await conn.executemany(
            "INSERT INTO readings (sensor_id, recorded_at, value) VALUES (?, ?, ?)",
            [(sensor_id, stamp, value) for stamp, value in zip(stamps, values, strict=True)],
        )


async def _insert_alarm(conn: Connection, alarm: AlarmSpec, now: datetime) -> None:
    """One alarm, raised ``hours_ago`` before ``now``; an inactive one cleared eight hours after it was raised."""
    raised = now - timedelta(hours=alarm.hours_ago)
    await conn.execute(
        "INSERT INTO alarms (alarm_id, pump_id, sensor_type, severity, message, value, raised_at, active, "
        "cleared_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            alarm.alarm_id,
            alarm.pump_id,
            alarm.sensor_type.value if alarm.sensor_type else None,
            alarm.severity,
            alarm.message,
            alarm.value,
            format_ts(raised),
            1 if alarm.active else 0,
            None if alarm.active else format_ts(raised + timedelta(hours=8)),
        ),
    )
