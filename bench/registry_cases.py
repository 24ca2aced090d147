"""The registry bench's cases: each read function through the kernel, through its service, and as bare SQL.

The bare side issues the statements the services run (copied from twin/assets.py, twin/alarms.py and
twin/sensors.py) straight on a driver connection: aiosqlite's ``execute_fetchall`` on SQLite, asyncpg's ``fetch``
on PostgreSQL (the same SQL, placeholders rewritten once, as the product's dialect does); each case checks that
the kernel's answer agrees with the bare rows. `bench/registry_bench.py` times them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import aiosqlite
import asyncpg
from semantic_kernel.functions import KernelArguments, KernelFunction

from kernel_setup.app import AppContext
from storage.connection import Row
from storage.dialect import to_postgres
from twin.models import SENSOR_SPECS, BadDirection, SensorType
from twin.sensors import LATEST_FILTER, trend_stats_query

# --- The SQL the services run, copied from twin/assets.py, twin/alarms.py and twin/sensors.py. ---

PUMP_SQL = "SELECT * FROM pumps WHERE pump_id = ?"
PUMP_SENSORS_SQL = (
    "SELECT sensor_type, unit, bad_direction, alarm_threshold, latest_value, latest_at "
    "FROM sensors WHERE pump_id = ? ORDER BY sensor_type"
)
PUMP_ALARMS_SQL = (
    "SELECT alarm_id, severity, sensor_type, message, value, raised_at, acknowledged_at FROM alarms "
    "WHERE pump_id = ? AND active = 1 ORDER BY "
    "CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END DESC, raised_at DESC"
)

ALARM_FILTER = (
    "(CAST(?1 AS TEXT) IS NULL OR severity = ?1) AND (CAST(?2 AS TEXT) IS NULL OR pump_id = ?2) "
    "AND (?3 = 0 OR active = 1)"
)
ALARM_COUNT_SQL = "SELECT COUNT(*) AS n FROM alarms WHERE " + ALARM_FILTER
ALARM_LIST_SQL = (
    "SELECT * FROM alarms WHERE " + ALARM_FILTER + " ORDER BY "
    "CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END DESC, "
    "raised_at DESC, alarm_id LIMIT ?4"
)
MAX_ALARMS_LISTED = 50

SUMMARY_STATUS_SQL = "SELECT status, COUNT(*) AS n FROM pumps GROUP BY status"
SUMMARY_SEVERITY_SQL = "SELECT severity, COUNT(*) AS n FROM alarms WHERE active = 1 GROUP BY severity"
SUMMARY_WORST_SQL = """
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
            """  # verbatim from twin/assets.py

TREND_SENSOR_SQL = (
    "SELECT sensor_id, alarm_threshold, latest_value, latest_at FROM sensors WHERE pump_id = ? AND sensor_type = ?"
)
TREND_DAYS = 30


LATEST_WHERE = LATEST_FILTER  # the product's own filter and trend query: the bare side runs the same statements


LATEST_COUNT_SQL = "SELECT COUNT(*) AS n FROM sensors s WHERE " + LATEST_WHERE
LATEST_LIST_SQL = (
    "SELECT s.pump_id, s.latest_value, s.latest_at, s.alarm_threshold, p.machine_group, p.foundation "
    "FROM sensors s JOIN pumps p ON p.pump_id = s.pump_id WHERE " + LATEST_WHERE + " ORDER BY {order}, s.pump_id "
    "LIMIT ?4"
)
MAX_READINGS_LISTED = 20
# The newest stored reading of one sensor, read from the readings table (the plant import's follow-newest update).
NEWEST_READING_SQL = "SELECT recorded_at, value FROM readings WHERE sensor_id = ? ORDER BY recorded_at DESC LIMIT 1"


def pump_id(number: int) -> str:
    return f"PUMP-{number:03d}"


@dataclass
class Case:
    """One benchmarked function: how to call it through the kernel, through its service, and bare."""

    name: str
    label: str
    kernel_call: Callable[[Any], Awaitable[Any]]
    service_call: Callable[[Any], Awaitable[Any]]
    bare_call: Callable[[Any], Awaitable[Any]]
    check: Callable[[str, Any], None]
    inputs: Callable[[random.Random], Any]
    pump_details_target: bool = False


class Bare(Protocol):
    """A driver connection that runs the product's SQL text and nothing else: no models, no JSON, no audit row."""

    name: str

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None: ...


class SqliteBare:
    """One aiosqlite call per statement (``execute_fetchall``: one hand-off to the connection's thread)."""

    name = "aiosqlite"

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return list(await self.conn.execute_fetchall(sql, params))

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        return next(iter(await self.conn.execute_fetchall(sql, params)), None)


class PostgresBare:
    """One asyncpg ``fetch`` per statement on one connection (asyncpg prepares and caches each statement)."""

    name = "asyncpg"

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self._sql: dict[str, str] = {}

    def _translated(self, sql: str) -> str:
        out = self._sql.get(sql)
        if out is None:
            out = self._sql[sql] = to_postgres(sql)
        return out

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return list(await self.conn.fetch(self._translated(sql), *params))

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self.conn.fetch(self._translated(sql), *params)
        return rows[0] if rows else None


class _Sides:
    """What every case calls: the app's kernel and services, the bare connection, and the fleet's pump ids."""

    def __init__(self, app: AppContext, bare: Bare, pumps: int) -> None:
        self.app = app
        self.bare = bare
        self.pumps = pumps

    def function(self, plugin: str, name: str) -> KernelFunction:
        return self.app.kernel.get_function(plugin, name)

    def random_pump(self, rng: random.Random) -> str:
        return pump_id(rng.randint(1, self.pumps))

    async def invoke(self, function: KernelFunction, **kwargs: Any) -> str:
        result = await self.app.kernel.invoke(function, KernelArguments(**kwargs))
        if result is None:
            raise RuntimeError(f"{function.fully_qualified_name} returned nothing")
        return str(result.value)


def build_cases(app: AppContext, bare: Bare, pumps: int) -> list[Case]:
    sides = _Sides(app, bare, pumps)
    return [
        _details_case(sides),
        *_alarm_cases(sides),
        _summary_case(sides),
        _latest_readings_case(sides),
        _trend_case(sides),
    ]


def _details_case(sides: _Sides) -> Case:
    details_fn = sides.function("assets", "get_pump_details")
    bare = sides.bare

    async def bare_details(pid: str) -> tuple[Any, ...]:
        pump = await bare.fetch_one(PUMP_SQL, (pid,))
        sensors = await bare.fetch_all(PUMP_SENSORS_SQL, (pid,))
        alarms = await bare.fetch_all(PUMP_ALARMS_SQL, (pid,))
        return pump, sensors, alarms

    def check_details(out: str, bare_out: tuple[Any, ...]) -> None:
        data = json.loads(out)
        pump, sensors, alarms = bare_out
        assert pump is not None and data["pump_id"] == pump["pump_id"], data
        assert len(data["latest_readings"]) == len(sensors) == len(SensorType), data
        assert len(data["active_alarms"]) == len(alarms), data

    return Case(
        name="assets-get_pump_details",
        label="random pump",
        kernel_call=lambda pid: sides.invoke(details_fn, pump_id=pid),
        service_call=lambda pid: sides.app.assets.pump_details(pid),
        bare_call=bare_details,
        check=check_details,
        inputs=sides.random_pump,
        pump_details_target=True,
    )


def _alarm_cases(sides: _Sides) -> list[Case]:
    """list_alarms fleet-wide, active only (the call a model makes for "any alarms?"), and for one pump."""
    alarms_fn = sides.function("alarms", "list_alarms")
    bare = sides.bare

    async def bare_alarms(pid: str | None) -> tuple[Any, ...]:
        params = (None, pid, 1)
        count = await bare.fetch_one(ALARM_COUNT_SQL, params)
        rows = await bare.fetch_all(ALARM_LIST_SQL, (*params, MAX_ALARMS_LISTED))
        return count, rows

    def check_alarms(out: str, bare_out: tuple[Any, ...]) -> None:
        data = json.loads(out)
        count, rows = bare_out
        assert data["count"] == count["n"] and data["returned"] == len(rows), data
        assert [a["alarm_id"] for a in data["alarms"]] == [r["alarm_id"] for r in rows], data

    return [
        Case(
            name="alarms-list_alarms",
            label="fleet, active",
            kernel_call=lambda _: sides.invoke(alarms_fn),
            service_call=lambda _: sides.app.alarms.list_alarms(),
            bare_call=bare_alarms,
            check=check_alarms,
            inputs=lambda rng: None,
        ),
        Case(
            name="alarms-list_alarms",
            label="random pump",
            kernel_call=lambda pid: sides.invoke(alarms_fn, pump_id=pid),
            service_call=lambda pid: sides.app.alarms.list_alarms(pump_id=pid),
            bare_call=bare_alarms,
            check=check_alarms,
            inputs=sides.random_pump,
        ),
    ]


def _summary_case(sides: _Sides) -> Case:
    summary_fn = sides.function("assets", "get_system_summary")
    bare = sides.bare

    async def bare_summary(_: None) -> tuple[Any, ...]:
        by_status = await bare.fetch_all(SUMMARY_STATUS_SQL)
        by_severity = await bare.fetch_all(SUMMARY_SEVERITY_SQL)
        worst = await bare.fetch_one(SUMMARY_WORST_SQL)
        return by_status, by_severity, worst

    def check_summary(out: str, bare_out: tuple[Any, ...]) -> None:
        data = json.loads(out)
        by_status, _, worst = bare_out
        assert data["total_pumps"] == sum(r["n"] for r in by_status) == sides.pumps, data
        assert data["worst_pump"]["pump_id"] == worst["pump_id"], data

    return Case(
        name="assets-get_system_summary",
        label="no arguments",
        kernel_call=lambda _: sides.invoke(summary_fn),
        service_call=lambda _: sides.app.assets.system_summary(),
        bare_call=bare_summary,
        check=check_summary,
        inputs=lambda rng: None,
    )


def _latest_readings_case(sides: _Sides) -> Case:
    """get_sensor_readings fleet-wide for a random sensor type: ranked from ``sensors.latest_value``."""
    readings_fn = sides.function("sensors", "get_sensor_readings")
    bare = sides.bare
    sensor_types = list(SensorType)

    async def bare_latest(sensor_type: SensorType) -> tuple[Any, ...]:
        high = SENSOR_SPECS[sensor_type].bad_direction is BadDirection.HIGH
        params = (sensor_type.value, None, None)
        count = await bare.fetch_one(LATEST_COUNT_SQL, params)
        order = "s.latest_value DESC" if high else "s.latest_value ASC"
        rows = await bare.fetch_all(LATEST_LIST_SQL.format(order=order), (*params, MAX_READINGS_LISTED))
        return count, rows

    def check_latest(out: str, bare_out: tuple[Any, ...]) -> None:
        data = json.loads(out)
        count, rows = bare_out
        assert data["count"] == count["n"] == sides.pumps, data
        assert [r["pump_id"] for r in data["readings"]] == [r["pump_id"] for r in rows], data

    return Case(
        name="sensors-get_sensor_readings",
        label="fleet, random type",
        kernel_call=lambda t: sides.invoke(readings_fn, sensor_type=t.value),
        service_call=lambda t: sides.app.sensors.latest_readings(t),
        bare_call=bare_latest,
        check=check_latest,
        inputs=lambda rng: rng.choice(sensor_types),
    )


def _trend_case(sides: _Sides) -> Case:
    trend_fn = sides.function("sensors", "get_sensor_trend")
    bare = sides.bare
    sensor_types = [t.value for t in SensorType]
    stats_sql = trend_stats_query(sides.app.db.dialect)

    async def bare_trend(args: tuple[str, str]) -> tuple[Any, ...]:
        pid, sensor_type = args
        sensor = await bare.fetch_one(TREND_SENSOR_SQL, (pid, sensor_type))
        assert sensor is not None
        end = sensor["latest_at"]
        end_dt = datetime.fromisoformat(end.replace("Z", "+00:00"))
        start = (end_dt - timedelta(days=TREND_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")
        stats = await bare.fetch_one(stats_sql, (sensor["sensor_id"], start, end))
        return sensor, stats

    def check_trend(out: str, bare_out: tuple[Any, ...]) -> None:
        data = json.loads(out)
        _, stats = bare_out
        assert data["readings"] == stats["n"] > 0, data

    return Case(
        name="sensors-get_sensor_trend",
        label=f"random pump+type, {TREND_DAYS} d",
        kernel_call=lambda a: sides.invoke(trend_fn, pump_id=a[0], sensor_type=a[1], days=TREND_DAYS),
        service_call=lambda a: sides.app.sensors.trend(a[0], SensorType(a[1]), TREND_DAYS),
        bare_call=bare_trend,
        check=check_trend,
        inputs=lambda rng: (sides.random_pump(rng), rng.choice(sensor_types)),
    )
