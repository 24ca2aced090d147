"""Copy a whole database into an empty one (`pumpops db copy`): every row of every table, the audit chain intact.

Rules:
- The target must be empty: its tables (migrated on open) hold no row. A non-empty target is refused before
  anything is written, so no site's data is ever merged into another's.
- Everything is written in one transaction of the target: a copy that fails leaves the target as empty as it was.
- Rows are read in primary-key order, a page at a time (keyset pagination), so a 10-million-row readings table
  never sits in memory whole.
- Ids the database assigns (identity columns on PostgreSQL) continue after the copied ones.
- SQL is built only from the schema's own names, each checked as a plain name (`storage.dialect.identifier`);
  every value is a parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from storage.database import Database
from storage.dialect import identifier
from storage.errors import StorageError

PAGE_ROWS = 10_000


@dataclass(frozen=True)
class Table:
    """A table to copy, parents before children, with the columns of its primary key."""

    name: str
    key: tuple[str, ...]
    identity: str | None = None  # a column the database assigns when an insert leaves it out

    def __post_init__(self) -> None:
        for name in (self.name, *self.key, *([self.identity] if self.identity else [])):
            identifier(name)

    def any_row(self) -> str:
        """A query with one row when the table holds any."""
        return f"SELECT 1 FROM {self.name} LIMIT 1"

    def count(self) -> str:
        """A query for the table's row count (``n``)."""
        return f"SELECT COUNT(*) AS n FROM {self.name}"

    def page(self, first: bool) -> str:
        """A query for the next page in key order: from the start, or after the key given as parameters."""
        order = ", ".join(self.key)
        after = "" if first else f"WHERE ({order}) > ({', '.join('?' * len(self.key))}) "
        return f"SELECT * FROM {self.name} {after}ORDER BY {order} LIMIT ?"

    def insert(self, columns: list[str]) -> str:
        """An insert of one row of ``columns`` (each checked as a plain name)."""
        names = ", ".join(identifier(column) for column in columns)
        return f"INSERT INTO {self.name} ({names}) VALUES ({', '.join('?' * len(columns))})"

    def continue_identity(self) -> str:
        """PostgreSQL: the identity column's next value after the highest copied one."""
        column = self.identity
        return (
            f"SELECT setval(pg_get_serial_sequence('{self.name}', '{column}'), "
            f"COALESCE((SELECT MAX({column}) FROM {self.name}), 0) + 1, false)"
        )


TABLES: tuple[Table, ...] = (
    Table("pumps", ("pump_id",)),
    Table("sensors", ("sensor_id",)),
    Table("readings", ("sensor_id", "recorded_at")),
    Table("alarms", ("alarm_id",)),
    Table("maintenance_records", ("record_id",), identity="record_id"),
    Table("ingest_manifest", ("collection", "source", "chunk_id")),
    Table("audit_log", ("id",), identity="id"),
    Table("sessions", ("session_id",)),
    Table("session_messages", ("session_id", "seq")),
    Table("approvals", ("approval_id",)),
    Table("idempotency", ("intent_key",)),
    Table("work_orders", ("work_order_id",)),
    Table("telemetry_sources", ("name",)),
    Table("alarm_triage", ("alarm_id",)),
)
"""Every table of the schema but ``_migrations`` (the target's own migrations record its schema)."""


@dataclass
class CopyReport:
    """Rows copied per table."""

    source: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)


async def copy_database(
    source: Database, target: Database, progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy every row of ``source`` into the empty ``target``; return the rows copied per table.

    Raises:
        StorageError: the target holds rows already (nothing is written), or a table could not be copied.
    """
    occupied = [table.name for table in TABLES if await target.fetch_one(table.any_row())]
    if occupied:
        raise StorageError(
            f"The target database {target.description} is not empty ({', '.join(occupied)} hold rows); "
            "`pumpops db copy` only fills an empty database. Create a new database and copy into it."
        )
    report = CopyReport(source=source.description, target=target.description)
    async with target.transaction() as conn:
        for table in TABLES:
            copied = 0
            async for columns, rows in _pages(source, table):
                await conn.executemany(table.insert(columns), rows)
                copied += len(rows)
                if progress is not None:
                    progress(table.name, len(rows))
            report.rows[table.name] = copied
            if table.identity is not None and target.dialect.is_postgres:
                await conn.execute(table.continue_identity())
    return report


async def count_rows(database: Database) -> dict[str, int]:
    """The row count of every copied table."""
    counts: dict[str, int] = {}
    for table in TABLES:
        row = await database.fetch_one(table.count())
        counts[table.name] = int(row["n"]) if row is not None else 0
    return counts


async def _pages(source: Database, table: Table) -> Any:
    """The table's rows in key order, a page at a time: (column names, rows as tuples)."""
    after: tuple[Any, ...] = ()
    while True:
        rows = await source.fetch_all(table.page(first=not after), (*after, PAGE_ROWS))
        if not rows:
            return
        columns = list(rows[0].keys())
        yield columns, [tuple(row) for row in rows]
        last = rows[-1]
        after = tuple(last[column] for column in table.key)
        if len(rows) < PAGE_ROWS:
            return
