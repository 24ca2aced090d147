"""The sample fleet PumpOps ships, as data: eight pumps across four stations, their alarms and maintenance history.

Values follow the project's domain reference: PUMP-007 (Group 1, rigid) is at 9.4 mm/s, zone D, with
a critical alarm; PUMP-004 (Group 1, flexible) is at 7.8 mm/s, zone C, with a high alarm; the others
sit mostly in zones A-B.

`twin.sample_fleet.load_sample_fleet` writes them into an empty registry, with a reading history for every sensor.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.models import Foundation, SensorType


@dataclass(frozen=True)
class PumpSpec:
    """One pump of the sample fleet and where its sensors end up."""

    pump_id: str
    name: str
    location: str
    model: str
    power_kw: float
    rated_speed_rpm: int
    machine_group: int
    foundation: Foundation
    status: str
    installed_on: str
    last_maintenance_on: str
    duty_flow_m3h: float
    duty_pressure_bar: float
    rated_current_a: float
    latest: dict[SensorType, float]
    starts: dict[SensorType, float]


AF400 = ("Aquaflow AF-400", 450.0, 1480, 1, 1800.0, 6.0, 48.0)
AF150 = ("Aquaflow AF-150", 110.0, 2960, 2, 400.0, 5.0, 190.0)
VT600 = ("Deepline VT-600", 630.0, 1480, 1, 2400.0, 4.5, 66.0)


def _pump(
    pump_id: str,
    name: str,
    location: str,
    model: tuple[str, float, int, int, float, float, float],
    foundation: Foundation,
    status: str,
    installed_on: str,
    last_maintenance_on: str,
    latest: tuple[float, float, float, float, float],
    starts: dict[SensorType, float] | None = None,
) -> PumpSpec:
    model_name, power, speed, group, flow, pressure, current = model
    vib, temp, q, p, i = latest
    return PumpSpec(
        pump_id=pump_id,
        name=name,
        location=location,
        model=model_name,
        power_kw=power,
        rated_speed_rpm=speed,
        machine_group=group,
        foundation=foundation,
        status=status,
        installed_on=installed_on,
        last_maintenance_on=last_maintenance_on,
        duty_flow_m3h=flow,
        duty_pressure_bar=pressure,
        rated_current_a=current,
        latest={
            SensorType.VIBRATION: vib,
            SensorType.BEARING_TEMPERATURE: temp,
            SensorType.FLOW: q,
            SensorType.DISCHARGE_PRESSURE: p,
            SensorType.MOTOR_CURRENT: i,
        },
        starts=starts or {},
    )


SAMPLE_PUMPS: tuple[PumpSpec, ...] = (
    _pump(
        "PUMP-001",
        "Raw Water Intake 1",
        "Station-A",
        AF400,
        Foundation.RIGID,
        "online",
        "2019-04-11",
        "2026-06-15",
        (2.1, 58.0, 1790.0, 6.1, 47.0),
    ),
    _pump(
        "PUMP-002",
        "Raw Water Intake 2",
        "Station-A",
        AF400,
        Foundation.RIGID,
        "online",
        "2019-04-11",
        "2026-05-02",
        (3.2, 61.0, 1750.0, 5.9, 48.5),
    ),
    _pump(
        "PUMP-003",
        "Booster 1",
        "Station-B",
        AF150,
        Foundation.RIGID,
        "maintenance",
        "2021-09-30",
        "2026-11-20",
        (1.1, 41.0, 385.0, 4.9, 183.0),
    ),
    _pump(
        "PUMP-004",
        "Booster 2",
        "Station-B",
        AF400,
        Foundation.FLEXIBLE,
        "online",
        "2023-01-20",
        "2026-03-09",
        (7.8, 72.0, 1700.0, 5.7, 50.5),
        {SensorType.VIBRATION: 5.6},
    ),
    _pump(
        "PUMP-005",
        "Transfer 1",
        "Station-C",
        VT600,
        Foundation.RIGID,
        "online",
        "2017-06-05",
        "2026-04-21",
        (3.9, 66.0, 2380.0, 4.4, 65.0),
        {SensorType.VIBRATION: 3.1},
    ),
    _pump(
        "PUMP-006",
        "Transfer 2",
        "Station-C",
        VT600,
        Foundation.RIGID,
        "offline",
        "2017-06-05",
        "2026-02-14",
        (2.4, 38.0, 1890.0, 3.7, 58.0),
    ),
    _pump(
        "PUMP-007",
        "Transfer 3",
        "Station-C",
        AF400,
        Foundation.RIGID,
        "online",
        "2018-03-14",
        "2025-08-22",
        (9.4, 81.0, 1650.0, 5.5, 52.0),
        {SensorType.VIBRATION: 4.8, SensorType.BEARING_TEMPERATURE: 66.0},
    ),
    _pump(
        "PUMP-008",
        "Distribution 1",
        "Station-D",
        AF150,
        Foundation.FLEXIBLE,
        "online",
        "2022-11-02",
        "2026-07-30",
        (2.6, 55.0, 395.0, 5.1, 180.0),
    ),
)


@dataclass(frozen=True)
class AlarmSpec:
    """One alarm of the sample fleet; ``hours_ago`` is relative to the load time."""

    alarm_id: str
    pump_id: str
    sensor_type: SensorType | None
    severity: str
    message: str
    value: float | None
    hours_ago: float
    active: bool


SAMPLE_ALARMS: tuple[AlarmSpec, ...] = (
    AlarmSpec(
        "ALM-0001",
        "PUMP-007",
        SensorType.VIBRATION,
        "critical",
        "Vibration 9.4 mm/s r.m.s. on the drive-end bearing housing, above the ISO 10816-3 zone C/D "
        "boundary of 7.1 mm/s for a Group 1 pump on a rigid foundation.",
        9.4,
        3,
        True,
    ),
    AlarmSpec(
        "ALM-0002",
        "PUMP-004",
        SensorType.VIBRATION,
        "high",
        "Vibration elevated at 7.8 mm/s r.m.s., inside ISO 10816-3 zone C for a Group 1 pump on a "
        "flexible foundation (B/C 7.1, C/D 11.0 mm/s).",
        7.8,
        20,
        True,
    ),
    AlarmSpec(
        "ALM-0003",
        "PUMP-007",
        SensorType.BEARING_TEMPERATURE,
        "medium",
        "Drive-end bearing temperature rising: 81 °C (alarm level 85 °C).",
        81.0,
        6,
        True,
    ),
    AlarmSpec(
        "ALM-0004",
        "PUMP-006",
        SensorType.DISCHARGE_PRESSURE,
        "medium",
        "Tripped on low discharge pressure (3.7 bar against a 4.5 bar duty point); held offline pending inspection.",
        3.7,
        52,
        True,
    ),
    AlarmSpec(
        "ALM-0005",
        "PUMP-008",
        SensorType.FLOW,
        "low",
        "Flow transmitter communication intermittent; readings may be stale.",
        None,
        30,
        True,
    ),
    AlarmSpec(
        "ALM-0006",
        "PUMP-007",
        SensorType.VIBRATION,
        "high",
        "Vibration 6.2 mm/s r.m.s., inside ISO 10816-3 zone C.",
        6.2,
        24 * 40,
        False,
    ),
    AlarmSpec(
        "ALM-0007",
        "PUMP-002",
        SensorType.BEARING_TEMPERATURE,
        "low",
        "Bearing temperature briefly 71 °C during a hot afternoon; returned to normal.",
        71.0,
        24 * 65,
        False,
    ),
)

SAMPLE_MAINTENANCE: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "PUMP-007",
        "2025-08-22",
        "preventive",
        "Bearing regrease, coupling alignment check (within 0.05 mm).",
        "R. Okafor",
    ),
    ("PUMP-007", "2024-09-10", "corrective", "Replaced mechanical seal after flush-pot level alarm.", "R. Okafor"),
    (
        "PUMP-004",
        "2026-03-09",
        "inspection",
        "Baseplate and grout inspection; soft-foot noted on motor feet.",
        "L. Haas",
    ),
    ("PUMP-004", "2023-01-20", "inspection", "Commissioning: baseline vibration 2.9 mm/s.", "L. Haas"),
    ("PUMP-001", "2026-06-15", "preventive", "Annual service: oil change, alignment, seal inspection.", "M. Ruiz"),
    ("PUMP-002", "2026-05-02", "preventive", "Annual service: oil change, alignment, seal inspection.", "M. Ruiz"),
    ("PUMP-003", "2026-11-20", "corrective", "Impeller wear-ring replacement under way.", "J. Chen"),
    ("PUMP-005", "2026-04-21", "preventive", "Line-shaft bearing lubrication and packing adjustment.", "J. Chen"),
    ("PUMP-006", "2026-02-14", "preventive", "Line-shaft bearing lubrication and packing adjustment.", "J. Chen"),
    ("PUMP-008", "2026-07-30", "preventive", "Motor bearing regrease; seal face inspection.", "M. Ruiz"),
)
