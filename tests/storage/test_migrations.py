from pathlib import Path

from storage import open_database
from storage.migrations import MIGRATIONS


async def test_migrations_are_recorded_in_order_and_applied_once(database_target: str | Path) -> None:
    first = await open_database(database_target)
    rows = await first.fetch_all("SELECT id FROM _migrations ORDER BY id")
    assert [r["id"] for r in rows] == [m.id for m in MIGRATIONS]
    await first.close()
    second = await open_database(database_target)
    again = await second.fetch_all("SELECT id FROM _migrations ORDER BY id")
    assert [r["id"] for r in again] == [m.id for m in MIGRATIONS]
    await second.close()


def test_migration_ids_are_unique_and_increasing() -> None:
    ids = [m.id for m in MIGRATIONS]
    assert ids == sorted(set(ids))


async def test_database_uses_wal_mode(tmp_path: Path) -> None:
    """SQLite only: write-ahead logging is a journal mode of the SQLite file (PostgreSQL has no such setting)."""
    db = await open_database(tmp_path / "w.db")
    row = await db.fetch_one("PRAGMA journal_mode")
    assert row is not None and row[0] == "wal"
    await db.close()


async def test_a_failed_transaction_leaves_nothing_behind(database_target: str | Path) -> None:
    db = await open_database(database_target)
    try:
        async with db.transaction() as conn:
            await conn.execute(
                "INSERT INTO pumps (pump_id, name, location, model, power_kw, rated_speed_rpm, machine_group, "
                "foundation, status, installed_on) VALUES ('PUMP-900', 'x', 'y', 'z', 1, 1, 1, 'rigid', 'online', "
                "'2020-01-01')"
            )
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    row = await db.fetch_one("SELECT COUNT(*) AS n FROM pumps")
    assert row is not None and row["n"] == 0
    await db.close()
