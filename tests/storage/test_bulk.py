"""`storage.bulk` on both engines: counted inserts of many rows, whatever the values' Python types."""

from __future__ import annotations

import pytest

from storage import INTEGRITY_ERRORS, Database
from storage.bulk import insert_all, insert_new

PUMP_COLUMNS = (
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


def pump(pump_id: str, power_kw: float) -> tuple[object, ...]:
    return (pump_id, "Bulk", "Station-B", "AF-150", power_kw, 1480, 1, "rigid", "online", "2020-01-01", None)


async def test_insert_all_takes_ints_among_floats_and_a_column_of_only_nulls(db: Database) -> None:
    async with db.transaction() as conn:
        assert await insert_all(conn, "pumps", PUMP_COLUMNS, [pump("PUMP-901", 75), pump("PUMP-902", 7.5)]) == 2
    stored = await db.fetch_all(
        "SELECT pump_id, power_kw, last_maintenance_on FROM pumps WHERE name = 'Bulk' ORDER BY pump_id"
    )
    assert [tuple(row) for row in stored] == [("PUMP-901", 75.0, None), ("PUMP-902", 7.5, None)]


async def test_insert_all_refuses_a_stored_key_and_writes_none_of_the_batch(db: Database) -> None:
    with pytest.raises(INTEGRITY_ERRORS):
        async with db.transaction() as conn:
            await insert_all(conn, "pumps", PUMP_COLUMNS, [pump("PUMP-903", 10.0), pump("PUMP-001", 10.0)])
    assert await db.fetch_all("SELECT pump_id FROM pumps WHERE name = 'Bulk'") == []


async def test_insert_new_counts_only_the_rows_it_added(db: Database) -> None:
    row = await db.fetch_one("SELECT sensor_id, recorded_at FROM readings ORDER BY recorded_at LIMIT 1")
    assert row is not None
    rows = [(row["sensor_id"], row["recorded_at"], 1.0), (row["sensor_id"], "2001-01-01T00:00:00+00:00", 2)]
    async with db.transaction() as conn:
        assert await insert_new(conn, "readings", ("sensor_id", "recorded_at", "value"), rows) == 1
    async with db.transaction() as conn:
        assert await insert_new(conn, "readings", ("sensor_id", "recorded_at", "value"), rows) == 0
