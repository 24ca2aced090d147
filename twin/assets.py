"""Pump-level queries: the fleet summary, filtered pump lists, and one pump in full."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from storage import Database
from twin.errors import InvalidInputError, NotFoundError
from twin.freshness import Staleness, stale_field
from twin.identifiers import escape_like, normalize_pump_id
from twin.iso10816 import ZoneAssessment, assess
from twin.models import Foundation, PumpStatus, SensorType, Severity

MAX_PUMPS_LISTED = 50
MAX_LOCATION_LENGTH = 200


# A parameter tested for NULL is cast to its type: PostgreSQL cannot infer the type of a bare ``? IS NULL``.
# LOWER on both sides: SQLite's LIKE ignores ASCII case, PostgreSQL's does not.
_PUMP_FILTER = (
    "(CAST(?1 AS TEXT) IS NULL OR p.status = ?1) "
    "AND (CAST(?2 AS TEXT) IS NULL OR LOWER(p.location) LIKE LOWER(?2) ESCAPE '\\')"
)


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True)


class PumpSummary(_Result):
    """One pump in a list."""

    pump_id: str
    name: str
    location: str
    model: str
    status: PumpStatus
    active_alarms: int


class PumpList(_Result):
    """A capped list of pumps matching a filter."""

    filters: dict[str, str]
    count: int
    returned: int
    truncated: bool
    pumps: list[PumpSummary]


class WorstPump(_Result):
    """The pump most in need of attention: highest active alarm severity, then highest vibration."""

    pump_id: str
    name: str
    location: str
    status: PumpStatus
    highest_active_severity: Severity | None
    vibration_mm_s: float | None
    reason: str
    stale: bool | None = stale_field()
    """True when ``vibration_mm_s`` is older than `Telemetry.StaleAfterSeconds`; absent otherwise."""
    age_seconds: int | None = stale_field()
    stale_note: str | None = stale_field()


class SystemSummary(_Result):
    """Fleet-wide counts and the worst pump."""

    total_pumps: int
    pumps_by_status: dict[str, int]
    active_alarms_by_severity: dict[str, int]
    active_alarms_total: int
    worst_pump: WorstPump | None


class LatestReading(_Result):
    """The latest value of one sensor, with its alarm threshold."""

    sensor_type: SensorType
    value: float | None
    unit: str
    recorded_at: str | None
    alarm_threshold: float
    bad_direction: str
    beyond_threshold: bool
    stale: bool | None = stale_field()
    """True when the value is older than `Telemetry.StaleAfterSeconds`; absent otherwise."""
    age_seconds: int | None = stale_field()
    """How old a stale value is; absent on a fresh one."""


class ActiveAlarm(_Result):
    """An active alarm as shown with its pump."""

    alarm_id: str
    severity: Severity
    sensor_type: str | None
    message: str
    value: float | None
    raised_at: str
    acknowledged: bool


class PumpDetails(_Result):
    """Everything about one pump in one call."""

    pump_id: str
    name: str
    location: str
    model: str
    power_kw: float
    rated_speed_rpm: int
    machine_group: int
    foundation: Foundation
    status: PumpStatus
    installed_on: str
    last_maintenance_on: str | None
    latest_readings: list[LatestReading]
    vibration_zone: ZoneAssessment | None
    active_alarms: list[ActiveAlarm]
    stale_note: str | None = stale_field()
    """Present when a latest reading is stale (the vibration zone too, when the vibration is)."""


class AssetService:
    """Read queries over pumps, answered from the registry database."""

    def __init__(self, db: Database, staleness: Staleness | None = None) -> None:
        self._db = db
        self._staleness = staleness or Staleness()

    async def system_summary(self) -> SystemSummary:
        """Count pumps by status and active alarms by severity, and find the worst pump in SQL."""
        by_status = {status.value: 0 for status in PumpStatus}
        for row in await self._db.fetch_all("SELECT status, COUNT(*) AS n FROM pumps GROUP BY status"):
            by_status[row["status"]] = row["n"]
        by_severity = {severity.value: 0 for severity in Severity}
        for row in await self._db.fetch_all(
            "SELECT severity, COUNT(*) AS n FROM alarms WHERE active = 1 GROUP BY severity"
        ):
            by_severity[row["severity"]] = row["n"]
        worst = await self._db.fetch_one(
            """
            WITH ranked AS (
                SELECT pump_id,
                       MAX(CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3
                                         WHEN 'medium' THEN 2 ELSE 1 END) AS severity_rank
                FROM alarms WHERE active = 1 GROUP BY pump_id
            )
            SELECT p.pump_id, p.name, p.location, p.status, r.severity_rank, s.latest_value AS vibration,
                   s.latest_at AS vibration_at
            FROM pumps p
            LEFT JOIN ranked r ON r.pump_id = p.pump_id
            LEFT JOIN sensors s ON s.pump_id = p.pump_id AND s.sensor_type = 'vibration'
            ORDER BY COALESCE(r.severity_rank, 0) DESC, COALESCE(s.latest_value, 0) DESC, p.pump_id
            LIMIT 1
            """
        )
        worst_pump = None
        if worst is not None:
            rank = worst["severity_rank"]
            severity = list(Severity)[rank - 1] if rank else None
            reason = (
                f"highest active alarm severity ({severity.value})"
                if severity is not None
                else "no active alarms; highest vibration"
            )
            age = self._staleness.age(worst["vibration_at"]) if worst["vibration"] is not None else None
            worst_pump = WorstPump(
                pump_id=worst["pump_id"],
                name=worst["name"],
                location=worst["location"],
                status=PumpStatus(worst["status"]),
                highest_active_severity=severity,
                vibration_mm_s=worst["vibration"],
                reason=reason,
                stale=True if age is not None else None,
                age_seconds=age,
                stale_note=self._staleness.note(1 if age is not None else 0),
            )
        return SystemSummary(
            total_pumps=sum(by_status.values()),
            pumps_by_status=by_status,
            active_alarms_by_severity=by_severity,
            active_alarms_total=sum(by_severity.values()),
            worst_pump=worst_pump,
        )

    async def list_pumps(self, status: PumpStatus | None = None, location: str | None = None) -> PumpList:
        """Pumps filtered by status and by station (case-insensitive substring), capped."""
        filters: dict[str, str] = {}
        if status is not None:
            filters["status"] = status.value
        pattern = None
        if location is not None and location.strip():
            location = location.strip()
            if len(location) > MAX_LOCATION_LENGTH:
                raise InvalidInputError(
                    f"location is {len(location)} characters long; give a station name such as 'Station-C'."
                )
            pattern = f"%{escape_like(location)}%"
            filters["location"] = location
        params = (status.value if status is not None else None, pattern)
        count_row = await self._db.fetch_one(
            "SELECT COUNT(*) AS n FROM pumps p WHERE " + _PUMP_FILTER,
            params,
        )
        count = count_row["n"] if count_row else 0
        rows = await self._db.fetch_all(
            "SELECT p.pump_id, p.name, p.location, p.model, p.status, "
            "(SELECT COUNT(*) FROM alarms a WHERE a.pump_id = p.pump_id AND a.active = 1) AS active_alarms "
            "FROM pumps p WHERE " + _PUMP_FILTER + " ORDER BY p.pump_id LIMIT ?3",
            (*params, MAX_PUMPS_LISTED),
        )
        pumps = [
            PumpSummary(
                pump_id=row["pump_id"],
                name=row["name"],
                location=row["location"],
                model=row["model"],
                status=PumpStatus(row["status"]),
                active_alarms=row["active_alarms"],
            )
            for row in rows
        ]
        return PumpList(filters=filters, count=count, returned=len(pumps), truncated=count > len(pumps), pumps=pumps)

    async def pump_details(self, pump_id: str) -> PumpDetails:
        """One pump: metadata, latest reading of every sensor, active alarms and its ISO 10816-3 zone.

        Raises:
            NotFoundError: no pump has that id.
        """
        wanted = normalize_pump_id(pump_id)
        pump = await self._db.fetch_one("SELECT * FROM pumps WHERE pump_id = ?", (wanted,))
        if pump is None:
            raise NotFoundError.pump(pump_id)
        sensors = await self._db.fetch_all(
            "SELECT sensor_type, unit, bad_direction, alarm_threshold, latest_value, latest_at "
            "FROM sensors WHERE pump_id = ? ORDER BY sensor_type",
            (wanted,),
        )
        alarms = await self._db.fetch_all(
            "SELECT alarm_id, severity, sensor_type, message, value, raised_at, acknowledged_at FROM alarms "
            "WHERE pump_id = ? AND active = 1 ORDER BY "
            "CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END DESC, "
            "raised_at DESC",
            (wanted,),
        )
        foundation = Foundation(pump["foundation"])
        readings = [_latest_reading(row, self._staleness) for row in sensors]
        vibration = next((r for r in readings if r.sensor_type is SensorType.VIBRATION and r.value is not None), None)
        zone = assess(vibration.value, pump["machine_group"], foundation) if vibration and vibration.value else None
        return PumpDetails(
            pump_id=pump["pump_id"],
            name=pump["name"],
            location=pump["location"],
            model=pump["model"],
            power_kw=pump["power_kw"],
            rated_speed_rpm=pump["rated_speed_rpm"],
            machine_group=pump["machine_group"],
            foundation=foundation,
            status=PumpStatus(pump["status"]),
            installed_on=pump["installed_on"],
            last_maintenance_on=pump["last_maintenance_on"],
            latest_readings=readings,
            vibration_zone=zone,
            active_alarms=[
                ActiveAlarm(
                    alarm_id=row["alarm_id"],
                    severity=Severity(row["severity"]),
                    sensor_type=row["sensor_type"],
                    message=row["message"],
                    value=row["value"],
                    raised_at=row["raised_at"],
                    acknowledged=row["acknowledged_at"] is not None,
                )
                for row in alarms
            ],
            stale_note=self._staleness.note(sum(1 for r in readings if r.stale)),
        )


def _latest_reading(row: object, staleness: Staleness) -> LatestReading:
    value = row["latest_value"]  # type: ignore[index]
    threshold = row["alarm_threshold"]  # type: ignore[index]
    direction = row["bad_direction"]  # type: ignore[index]
    beyond = value is not None and (value >= threshold if direction == "high" else value <= threshold)
    age = staleness.age(row["latest_at"]) if value is not None else None  # type: ignore[index]
    return LatestReading(
        sensor_type=SensorType(row["sensor_type"]),  # type: ignore[index]
        value=value,
        unit=row["unit"],  # type: ignore[index]
        recorded_at=row["latest_at"],  # type: ignore[index]
        alarm_threshold=threshold,
        bad_direction=direction,
        beyond_threshold=beyond,
        stale=True if age is not None else None,
        age_seconds=age,
    )
