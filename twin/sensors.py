"""Sensor queries: latest readings ranked worst first, and trends with a threshold projection."""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from storage import Database, Dialect, Row
from twin.errors import InvalidInputError, NotFoundError
from twin.freshness import Staleness, stale_field
from twin.identifiers import normalize_pump_id
from twin.iso10816 import Zone, assess
from twin.models import SENSOR_SPECS, BadDirection, Foundation, SensorType
from twin.timestamps import format_ts, parse_ts

MAX_READINGS_LISTED = 20
MIN_TREND_DAYS = 1
MAX_TREND_DAYS = 365
PROJECTION_HORIZON_DAYS = 365


class SensorReading(BaseModel):
    """The latest reading of one sensor, naming its pump."""

    model_config = ConfigDict(frozen=True)
    pump_id: str
    sensor_type: SensorType
    value: float
    unit: str
    recorded_at: str
    alarm_threshold: float
    beyond_threshold: bool
    iso_zone: Zone | None = None
    stale: bool | None = stale_field()
    """True when the value is older than `Telemetry.StaleAfterSeconds`; absent otherwise."""
    age_seconds: int | None = stale_field()
    """How old a stale value is; absent on a fresh one."""


class SensorReadingList(BaseModel):
    """Latest readings of one sensor type, worst first by that sensor's bad direction."""

    model_config = ConfigDict(frozen=True)
    sensor_type: SensorType
    unit: str
    bad_direction: BadDirection
    order: str
    filters: dict[str, str | float]
    count: int
    returned: int
    truncated: bool
    readings: list[SensorReading]
    stale_note: str | None = stale_field()
    """Present when a reading is stale: not to be presented as current."""


class ProjectionStatus(str, Enum):
    """How the trend relates to the alarm threshold."""

    CROSSES = "crosses_threshold"
    ALREADY_BEYOND = "already_beyond_threshold"
    NOT_TOWARD = "not_trending_toward_threshold"
    BEYOND_HORIZON = "not_within_a_year"
    TOO_FEW_READINGS = "too_few_readings"


class SensorTrend(BaseModel):
    """Statistics of one sensor over a window ending at its latest reading, with a projection."""

    model_config = ConfigDict(frozen=True)
    pump_id: str
    sensor_type: SensorType
    unit: str
    bad_direction: BadDirection
    window_days: int
    window_start: str | None
    window_end: str | None
    readings: int
    min: float | None
    max: float | None
    mean: float | None
    latest: float | None
    slope_per_day: float | None
    alarm_threshold: float
    projection: ProjectionStatus
    projected_crossing_date: str | None
    days_until_crossing: float | None
    stale: bool | None = stale_field()
    """True when ``latest`` (recorded at ``window_end``) is older than `Telemetry.StaleAfterSeconds`."""
    age_seconds: int | None = stale_field()
    stale_note: str | None = stale_field()


# The latest readings' filter: ?1 sensor type, ?2 one pump or NULL, ?3 a floor or NULL (cast: PostgreSQL cannot
# infer the type of a bare ``? IS NULL``).
LATEST_FILTER = (
    "s.sensor_type = ?1 AND s.latest_value IS NOT NULL AND (CAST(?2 AS TEXT) IS NULL OR s.pump_id = ?2) "
    "AND (CAST(?3 AS DOUBLE PRECISION) IS NULL OR s.latest_value >= ?3)"
)


@lru_cache(maxsize=2)
def trend_stats_query(dialect: Dialect) -> str:
    """The window statistics of one sensor (?1) from ?2 to ?3, x in days since ?2, in the dialect's spelling."""
    jd = dialect.julian_days
    return f"""
        SELECT COUNT(*) AS n, MIN(value) AS lo, MAX(value) AS hi, AVG(value) AS mean,
               SUM(x) AS sx, SUM(value) AS sy, SUM(x * value) AS sxy, SUM(x * x) AS sxx
        FROM (SELECT {jd("recorded_at")} - {jd("?2")} AS x, value
              FROM readings WHERE sensor_id = ?1 AND recorded_at >= ?2 AND recorded_at <= ?3) AS window_rows
        """


class SensorService:
    """Read queries over sensors and readings."""

    def __init__(self, db: Database, staleness: Staleness | None = None) -> None:
        self._db = db
        self._staleness = staleness or Staleness()

    async def latest_readings(
        self, sensor_type: SensorType, pump_id: str | None = None, min_value: float | None = None
    ) -> SensorReadingList:
        """Latest reading of every sensor of a type, worst first; optionally one pump, optionally ``>= min_value``."""
        spec = SENSOR_SPECS[sensor_type]
        pump = normalize_pump_id(pump_id) if pump_id is not None and pump_id.strip() else None
        params = (sensor_type.value, pump, min_value)
        where = LATEST_FILTER
        count_row = await self._db.fetch_one("SELECT COUNT(*) AS n FROM sensors s WHERE " + where, params)
        count = count_row["n"] if count_row else 0
        order = "s.latest_value DESC" if spec.bad_direction is BadDirection.HIGH else "s.latest_value ASC"
        query = (
            "SELECT s.pump_id, s.latest_value, s.latest_at, s.alarm_threshold, p.machine_group, p.foundation "
            "FROM sensors s JOIN pumps p ON p.pump_id = s.pump_id WHERE "
            + where
            + " ORDER BY "
            + order
            + ", s.pump_id "
            "LIMIT ?4"
        )
        rows = await self._db.fetch_all(query, (*params, MAX_READINGS_LISTED))
        readings = [_reading(row, sensor_type, self._staleness) for row in rows]
        filters: dict[str, str | float] = {}
        if pump is not None:
            filters["pump_id"] = pump
        if min_value is not None:
            filters["min_value"] = min_value
        return SensorReadingList(
            sensor_type=sensor_type,
            unit=spec.unit,
            bad_direction=spec.bad_direction,
            order="highest first" if spec.bad_direction is BadDirection.HIGH else "lowest first",
            filters=filters,
            count=count,
            returned=len(readings),
            truncated=count > len(readings),
            readings=readings,
            stale_note=self._staleness.note(sum(1 for r in readings if r.stale)),
        )

    async def trend(self, pump_id: str, sensor_type: SensorType, days: int = 30) -> SensorTrend:
        """Trend statistics over ``days`` ending at the latest reading, and when the trend crosses the alarm.

        Min, max, mean and the least-squares slope per day are computed in SQL.

        Raises:
            InvalidInputError: ``days`` outside 1-365.
            NotFoundError: no such pump, or it has no sensor of that type.
        """
        if not MIN_TREND_DAYS <= days <= MAX_TREND_DAYS:
            raise InvalidInputError(f"days must be between {MIN_TREND_DAYS} and {MAX_TREND_DAYS}, got {days!r}.")
        wanted = normalize_pump_id(pump_id)
        spec = SENSOR_SPECS[sensor_type]
        sensor = await self._sensor(pump_id, wanted, sensor_type)
        threshold = sensor["alarm_threshold"]
        empty = _no_trend(wanted, sensor_type, days, threshold)
        end = sensor["latest_at"]
        if end is None:
            return empty
        end_dt = parse_ts(end)
        start = format_ts(end_dt - timedelta(days=days))
        stats = await self._db.fetch_one(trend_stats_query(self._db.dialect), (sensor["sensor_id"], start, end))
        if stats is None or stats["n"] == 0:
            return empty
        n = stats["n"]
        latest = sensor["latest_value"]
        denominator = n * stats["sxx"] - stats["sx"] ** 2
        slope = (n * stats["sxy"] - stats["sx"] * stats["sy"]) / denominator if n >= 2 and denominator > 0 else None
        status, crossing, days_until = _project(latest, slope, threshold, spec.bad_direction, end_dt)
        age = self._staleness.age(end)
        return empty.model_copy(
            update={
                "window_start": start,
                "window_end": end,
                "readings": n,
                "min": round(stats["lo"], 3),
                "max": round(stats["hi"], 3),
                "mean": round(stats["mean"], 3),
                "latest": latest,
                "slope_per_day": None if slope is None else round(slope, 4),
                "projection": status,
                "projected_crossing_date": crossing,
                "days_until_crossing": days_until,
                "stale": True if age is not None else None,
                "age_seconds": age,
                "stale_note": self._staleness.note(1 if age is not None else 0),
            }
        )

    async def _sensor(self, pump_id: str, wanted: str, sensor_type: SensorType) -> Row:
        """The pump's sensor of ``sensor_type`` (``wanted`` is ``pump_id`` normalized).

        Raises:
            NotFoundError: no such pump, or it has no sensor of that type.
        """
        sensor = await self._db.fetch_one(
            "SELECT sensor_id, alarm_threshold, latest_value, latest_at FROM sensors "
            "WHERE pump_id = ? AND sensor_type = ?",
            (wanted, sensor_type.value),
        )
        if sensor is None:
            exists = await self._db.fetch_one("SELECT 1 FROM pumps WHERE pump_id = ?", (wanted,))
            if exists is None:
                raise NotFoundError.pump(pump_id)
            raise NotFoundError(f"Pump {wanted} has no {sensor_type.value} sensor.")
        return sensor


def _reading(row: Row, sensor_type: SensorType, staleness: Staleness) -> SensorReading:
    """One row of `SensorService.latest_readings` as a reading, with its ISO 10816-3 zone for vibration."""
    spec = SENSOR_SPECS[sensor_type]
    value = row["latest_value"]
    threshold = row["alarm_threshold"]
    zone = (
        assess(value, row["machine_group"], Foundation(row["foundation"])).zone
        if sensor_type is SensorType.VIBRATION
        else None
    )
    return SensorReading(
        pump_id=row["pump_id"],
        sensor_type=sensor_type,
        value=value,
        unit=spec.unit,
        recorded_at=row["latest_at"],
        alarm_threshold=threshold,
        beyond_threshold=_beyond(value, threshold, spec.bad_direction),
        iso_zone=zone,
        stale=True if (age := staleness.age(row["latest_at"])) is not None else None,
        age_seconds=age,
    )


def _no_trend(pump_id: str, sensor_type: SensorType, days: int, threshold: float) -> SensorTrend:
    """The trend of a window without readings: no statistics, too few readings to project."""
    spec = SENSOR_SPECS[sensor_type]
    return SensorTrend(
        pump_id=pump_id,
        sensor_type=sensor_type,
        unit=spec.unit,
        bad_direction=spec.bad_direction,
        window_days=days,
        window_start=None,
        window_end=None,
        readings=0,
        min=None,
        max=None,
        mean=None,
        latest=None,
        slope_per_day=None,
        alarm_threshold=threshold,
        projection=ProjectionStatus.TOO_FEW_READINGS,
        projected_crossing_date=None,
        days_until_crossing=None,
    )


def _beyond(value: float, threshold: float, direction: BadDirection) -> bool:
    return value >= threshold if direction is BadDirection.HIGH else value <= threshold


def _project(
    latest: float, slope: float | None, threshold: float, direction: BadDirection, end: datetime
) -> tuple[ProjectionStatus, str | None, float | None]:
    if _beyond(latest, threshold, direction):
        return ProjectionStatus.ALREADY_BEYOND, None, 0.0
    if slope is None:
        return ProjectionStatus.TOO_FEW_READINGS, None, None
    toward = slope > 0 if direction is BadDirection.HIGH else slope < 0
    if not toward:
        return ProjectionStatus.NOT_TOWARD, None, None
    days_until = (threshold - latest) / slope
    if days_until > PROJECTION_HORIZON_DAYS:
        return ProjectionStatus.BEYOND_HORIZON, None, None
    crossing = end + timedelta(days=days_until)
    return ProjectionStatus.CROSSES, crossing.date().isoformat(), round(days_until, 1)
