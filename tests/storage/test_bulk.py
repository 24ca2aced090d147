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


async def test_rows_past_one_statements_parameters_are_all_written_and_counted_once(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seven parameters a statement: two readings each, so 9 rows take five statements (the last of one row).
    monkeypatch.setattr("storage.bulk.STATEMENT_PARAMETERS", 7)
    row = await db.fetch_one("SELECT sensor_id FROM readings LIMIT 1")
    assert row is not None
    stamps = [f"2001-01-01T00:00:{second:02d}Z" for second in range(9)]
    rows = [(row["sensor_id"], stamp, float(k)) for k, stamp in enumerate(stamps)]
    async with db.transaction() as conn:
        assert await insert_new(conn, "readings", ("sensor_id", "recorded_at", "value"), rows[:4]) == 4
        # Repeats inside a statement and across statements are left alone and not counted.
        again = [rows[3], rows[4], rows[4], *rows[5:], rows[0]]
        assert await insert_new(conn, "readings", ("sensor_id", "recorded_at", "value"), again) == 5
    stored = await db.fetch_all(
        "SELECT recorded_at, value FROM readings WHERE sensor_id = ? AND recorded_at < '2002' ORDER BY recorded_at",
        (row["sensor_id"],),
    )
    assert [(r["recorded_at"], r["value"]) for r in stored] == [(stamp, float(k)) for k, stamp in enumerate(stamps)]
