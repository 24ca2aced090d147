"""Alarms raised and cleared from live readings: a duration beyond the threshold, a deadband and a clear duration.

Rules, per sensor (times are the readings' own timestamps, never the wall clock):
- A reading is *beyond* when its value is above the sensor's alarm threshold (bad direction high) or below it
  (bad direction low).
- An alarm is raised once the value has been beyond without a break for at least ``raise_after_seconds``
  (with 0, one reading beyond raises). A reading back inside before then restarts the wait, so a value flapping
  around the threshold in shorter spans never raises. The alarm's ``raised_at`` is when the value went beyond.
- Once raised, a value counts as back *inside* only past the deadband: at or below the threshold minus
  ``deadband_percent`` of |threshold| (bad direction high; above the threshold plus it for low). The alarm clears
  (``active = 0``, ``cleared_at`` the reading's time) once the value has stayed inside ``clear_after_seconds``.
- Severity: vibration takes its ISO 10816-3 zone (D critical, C high, B medium, A low) for the pump's machine
  group and foundation; other sensors the highest configured level the value reaches (``levels``), else
  medium. While raised, severity only escalates (the row's severity, value and message follow).
- An alarm this engine raised carries ``origin = 'telemetry'``; only those are cleared by it, and a restart
  takes them up again instead of raising twice. A sensor with an active alarm of any other origin (imported,
  loaded) gets no second alarm, and that alarm is left alone.
- A reading older than the last one seen for its sensor is ignored: the rules follow each sensor forward.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from storage import Connection, Database, Row
from storage.bulk import dialect_of
from twin.iso10816 import Zone, assess
from twin.models import BadDirection, Foundation, SensorType, Severity
from twin.readings import Reading
from twin.timestamps import format_ts, parse_ts

logger = logging.getLogger(__name__)

ORIGIN = "telemetry"
_RANK = {severity: severity.rank for severity in Severity}
_ZONE_SEVERITY = {Zone.A: Severity.LOW, Zone.B: Severity.MEDIUM, Zone.C: Severity.HIGH, Zone.D: Severity.CRITICAL}


@dataclass(frozen=True, slots=True)
class _Sensor:
    """What the rules need to know of one sensor and its pump.

    ``high`` when its bad direction is high; ``clear_line`` is the threshold moved inside by the deadband;
    ``top_rank`` the rank of the highest severity this sensor's readings can reach, so a raised alarm already there
    skips the severity of every later reading.
    """

    threshold: float
    high: bool
    unit: str
    machine_group: int
    foundation: Foundation
    clear_line: float
    top_rank: int


@dataclass(slots=True)
class _Alarm:
    """An alarm this engine raised; ``alarm_id`` is None until it is written."""

    pump_id: str
    sensor_type: SensorType
    severity: Severity
    value: float
    message: str
    raised_at: datetime
    alarm_id: str | None = None
    active: bool = True
    cleared_at: datetime | None = None


@dataclass(slots=True)
class _State:
    """Where one sensor stands: since when beyond (not raised), since when inside (raised), its alarm."""

    last_at: datetime | None = None
    beyond_since: datetime | None = None
    inside_since: datetime | None = None
    alarm: _Alarm | None = None


class AlarmRules:
    """Raises and clears alarms from readings as the module's rules say; call `start` before `observe`."""

    def __init__(
        self,
        db: Database,
        *,
        raise_after_seconds: float,
        clear_after_seconds: float,
        deadband_percent: float,
        levels: Mapping[str, Mapping[str, float]],
    ) -> None:
        self._db = db
        self._raise_after = timedelta(seconds=raise_after_seconds)
        self._clear_after = timedelta(seconds=clear_after_seconds)
        self._deadband = deadband_percent / 100.0
        self._levels = {
            SensorType(sensor): sorted(
                ((Severity(name), value) for name, value in named.items()), key=lambda lv: lv[0].rank
            )
            for sensor, named in levels.items()
        }
        # Keyed on (pump id, sensor type member): a member hashes faster than its ``.value`` is read.
        self._sensors: dict[tuple[str, SensorType], _Sensor] = {}
        self._states: dict[tuple[str, SensorType], _State] = {}

    async def start(self) -> None:
        """Load the sensors (thresholds, directions, pump classes) and the active alarms this engine raised."""
        await self._load_sensors()
        rows = await self._db.fetch_all(
            "SELECT alarm_id, pump_id, sensor_type, severity, value, message, raised_at FROM alarms "
            "WHERE active = 1 AND origin = ? AND sensor_type IS NOT NULL",
            (ORIGIN,),
        )
        for row in rows:
            alarm = _Alarm(
                pump_id=row["pump_id"],
                sensor_type=SensorType(row["sensor_type"]),
                severity=Severity(row["severity"]),
                value=row["value"] if row["value"] is not None else 0.0,
                message=row["message"],
                raised_at=parse_ts(row["raised_at"]),
                alarm_id=row["alarm_id"],
            )
            self._states.setdefault((alarm.pump_id, alarm.sensor_type), _State()).alarm = alarm

    async def observe(self, readings: Sequence[Reading]) -> list[str]:
        """Apply the rules to readings (oldest first); write what changed in one transaction; return new alarm ids."""
        changed: dict[int, _Alarm] = {}
        standing: set[tuple[str, str]] | None = None  # (pump, sensor type) of every active alarm, read when needed
        reloaded = False
        sensor_of = self._sensors.get
        state_of = self._states.get
        raise_after = self._raise_after
        # The common readings (inside with no alarm, beyond with an alarm at its top) are settled in this loop
        # without a call: the loop runs once per live reading, beside the writes, on the service's one thread.
        for reading in readings:
            key = (reading.pump_id, reading.sensor_type)
            sensor = sensor_of(key)
            if sensor is None:
                if reloaded:
                    continue
                await self._load_sensors()  # a sensor imported while running: the list is read once a batch
                reloaded = True
                sensor_of = self._sensors.get
                sensor = sensor_of(key)
                if sensor is None:
                    continue
            state = state_of(key)
            if state is None:
                state = self._states[key] = _State()
            at = reading.at
            if state.last_at is not None and at < state.last_at:
                continue
            state.last_at = at
            value = reading.value
            beyond = value > sensor.threshold if sensor.high else value < sensor.threshold
            alarm = state.alarm
            if alarm is None:
                if not beyond:
                    state.beyond_since = None
                    continue
                if state.beyond_since is None:
                    state.beyond_since = at
                if at - state.beyond_since < raise_after:
                    continue
                # An active alarm of another origin (imported, loaded) stands for this sensor: no second alarm.
                # The active alarms are read once per batch, only when a raise is due: the common path reads nothing.
                if standing is None:
                    standing = await self._active_alarm_keys()
                if (reading.pump_id, reading.sensor_type.value) not in standing:
                    state.alarm = self._raised(state.beyond_since, sensor, reading)
                    state.inside_since = None
                    changed[id(state.alarm)] = state.alarm
                continue
            if value <= sensor.clear_line if sensor.high else value >= sensor.clear_line:
                if self._inside(state, alarm, at):
                    changed[id(alarm)] = alarm
                continue
            state.inside_since = None
            # Inside the deadband is neither clearing nor worse; an alarm at its top severity cannot rise.
            if beyond and _RANK[alarm.severity] < sensor.top_rank and self._escalated(alarm, sensor, reading):
                changed[id(alarm)] = alarm
        if not changed:
            return []
        return await self._write(list(changed.values()))

    def _inside(self, state: _State, alarm: _Alarm, at: datetime) -> bool:
        """A raised sensor back inside past the deadband at ``at``: clear the alarm once inside long enough.

        True when it was cleared (the sensor then has no alarm of ours).
        """
        if state.inside_since is None:
            state.inside_since = at
        if at - state.inside_since < self._clear_after:
            return False
        alarm.active = False
        alarm.cleared_at = at
        state.alarm = state.beyond_since = state.inside_since = None
        return True

    def _escalated(self, alarm: _Alarm, sensor: _Sensor, reading: Reading) -> bool:
        """Raise the alarm's severity (with its value and message) if ``reading`` reaches a higher one; True if so."""
        severity = self._severity(sensor, reading)
        if _RANK[severity] <= _RANK[alarm.severity]:
            return False
        alarm.severity = severity
        alarm.value = reading.value
        alarm.message = _message(reading, sensor, reading.at - alarm.raised_at)
        return True

    def _raised(self, since: datetime, sensor: _Sensor, reading: Reading) -> _Alarm:
        """The alarm a sensor beyond its threshold since ``since`` gets at ``reading`` (not yet written)."""
        return _Alarm(
            pump_id=reading.pump_id,
            sensor_type=reading.sensor_type,
            severity=self._severity(sensor, reading),
            value=reading.value,
            message=_message(reading, sensor, reading.at - since),
            raised_at=since,
        )

    def _severity(self, sensor: _Sensor, reading: Reading) -> Severity:
        """The ISO 10816-3 zone's severity for vibration; else the highest configured level reached, or medium."""
        if reading.sensor_type is SensorType.VIBRATION:
            return _ZONE_SEVERITY[assess(reading.value, sensor.machine_group, sensor.foundation).zone]
        reached = [
            severity
            for severity, level in self._levels.get(reading.sensor_type, [])
            if (reading.value >= level if sensor.high else reading.value <= level)
        ]
        return reached[-1] if reached else Severity.MEDIUM

    async def _active_alarm_keys(self) -> set[tuple[str, str]]:
        """(pump id, sensor type) of every active alarm of a sensor, whatever its origin."""
        rows = await self._db.fetch_all(
            "SELECT DISTINCT pump_id, sensor_type FROM alarms WHERE active = 1 AND sensor_type IS NOT NULL"
        )
        return {(row["pump_id"], row["sensor_type"]) for row in rows}

    async def _load_sensors(self) -> None:
        rows = await self._db.fetch_all(
            "SELECT s.pump_id, s.sensor_type, s.unit, s.bad_direction, s.alarm_threshold, p.machine_group, "
            "p.foundation FROM sensors s JOIN pumps p ON p.pump_id = s.pump_id"
        )
        self._sensors = {}
        for row in rows:
            sensor_type = SensorType(row["sensor_type"])
            self._sensors[(row["pump_id"], sensor_type)] = self._sensor(row, sensor_type)

    def _sensor(self, row: Row, sensor_type: SensorType) -> _Sensor:
        threshold = row["alarm_threshold"]
        high = BadDirection(row["bad_direction"]) is BadDirection.HIGH
        margin = self._deadband * abs(threshold)
        if sensor_type is SensorType.VIBRATION:
            top = Severity.CRITICAL
        else:  # a value reaching no configured level is medium (`_severity`)
            reachable = [Severity.MEDIUM, *(level for level, _ in self._levels.get(sensor_type, []))]
            top = max(reachable, key=_RANK.__getitem__)
        return _Sensor(
            threshold=threshold,
            high=high,
            unit=row["unit"],
            machine_group=row["machine_group"],
            foundation=Foundation(row["foundation"]),
            clear_line=threshold - margin if high else threshold + margin,
            top_rank=_RANK[top],
        )

    async def _write(self, changed: list[_Alarm]) -> list[str]:
        """Insert the new alarms and update the changed ones in one transaction; return the new ids."""
        raised: list[str] = []
        async with self._db.transaction() as conn:
            number = await _next_alarm_number(conn)
            for alarm in changed:
                if alarm.alarm_id is None:
                    alarm.alarm_id = f"ALM-{number:04d}"
                    number += 1
                    raised.append(alarm.alarm_id)
                    await conn.execute(
                        "INSERT INTO alarms (alarm_id, pump_id, sensor_type, severity, message, value, raised_at, "
                        "active, cleared_at, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            alarm.alarm_id,
                            alarm.pump_id,
                            alarm.sensor_type.value,
                            alarm.severity.value,
                            alarm.message,
                            alarm.value,
                            format_ts(alarm.raised_at),
                            int(alarm.active),
                            None if alarm.cleared_at is None else format_ts(alarm.cleared_at),
                            ORIGIN,
                        ),
                    )
                else:
                    await conn.execute(
                        "UPDATE alarms SET severity = ?, value = ?, message = ?, active = ?, cleared_at = ? "
                        "WHERE alarm_id = ? AND active = 1",
                        (
                            alarm.severity.value,
                            alarm.value,
                            alarm.message,
                            int(alarm.active),
                            None if alarm.cleared_at is None else format_ts(alarm.cleared_at),
                            alarm.alarm_id,
                        ),
                    )
        if raised:
            logger.info("raised %s from telemetry", ", ".join(raised))
        return raised


async def _next_alarm_number(conn: Connection) -> int:
    """One past the highest ``ALM-`` number in the registry (read inside the writing transaction)."""
    rows = list(await conn.execute_fetchall(dialect_of(conn).max_number_query("alarms", "alarm_id", "ALM-")))
    return (rows[0][0] or 0) + 1 if rows else 1


def _message(reading: Reading, sensor: _Sensor, duration: timedelta) -> str:
    """E.g. ``vibration 9.4 mm/s beyond its alarm threshold 7.1 mm/s for 30 s (raised from telemetry)``."""
    name = reading.sensor_type.value.replace("_", " ")
    seconds = _number(round(duration.total_seconds(), 1))
    return (
        f"{name} {_number(reading.value)} {sensor.unit} beyond its alarm threshold {_number(sensor.threshold)} "
        f"{sensor.unit} for {seconds} s (raised from telemetry)"
    )


def _number(value: float) -> str:
    """A value as people write it: up to three decimals, no trailing zeros (``9.4``, ``1650``)."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
