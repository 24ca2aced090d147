"""Ordered schema migrations, each applied once and recorded in the `_migrations` table.

Append new migrations at the end; never edit or reorder one that has shipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from storage.dialect import ddl_to_postgres

if TYPE_CHECKING:
    from storage.database import Database


@dataclass(frozen=True)
class Migration:
    """One schema step."""

    id: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "asset registry",
        """
        CREATE TABLE pumps (
            pump_id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            location TEXT NOT NULL,
            model TEXT NOT NULL,
            power_kw REAL NOT NULL CHECK (power_kw > 0),
            rated_speed_rpm INTEGER NOT NULL CHECK (rated_speed_rpm > 0),
            machine_group INTEGER NOT NULL CHECK (machine_group IN (1, 2)),
            foundation TEXT NOT NULL CHECK (foundation IN ('rigid', 'flexible')),
            status TEXT NOT NULL CHECK (status IN ('online', 'offline', 'maintenance')),
            installed_on TEXT NOT NULL,
            last_maintenance_on TEXT
        );
        CREATE INDEX pumps_by_status ON pumps (status);
        CREATE INDEX pumps_by_location ON pumps (location);

        CREATE TABLE sensors (
            sensor_id TEXT PRIMARY KEY,
            pump_id TEXT NOT NULL REFERENCES pumps (pump_id),
            sensor_type TEXT NOT NULL CHECK (sensor_type IN
                ('vibration', 'bearing_temperature', 'flow', 'discharge_pressure', 'motor_current')),
            unit TEXT NOT NULL,
            bad_direction TEXT NOT NULL CHECK (bad_direction IN ('high', 'low')),
            alarm_threshold REAL NOT NULL,
            latest_value REAL,
            latest_at TEXT,
            UNIQUE (pump_id, sensor_type)
        );
        CREATE INDEX sensors_by_type ON sensors (sensor_type, latest_value);

        CREATE TABLE readings (
            sensor_id TEXT NOT NULL REFERENCES sensors (sensor_id),
            recorded_at TEXT NOT NULL,
            value REAL NOT NULL,
            PRIMARY KEY (sensor_id, recorded_at)
        ) WITHOUT ROWID;

        CREATE TABLE alarms (
            alarm_id TEXT PRIMARY KEY,
            pump_id TEXT NOT NULL REFERENCES pumps (pump_id),
            sensor_type TEXT,
            severity TEXT NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
            message TEXT NOT NULL,
            value REAL,
            raised_at TEXT NOT NULL,
            active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
            acknowledged_at TEXT,
            acknowledged_by TEXT,
            acknowledgement_note TEXT,
            cleared_at TEXT
        );
        CREATE INDEX alarms_by_activity ON alarms (active, severity);
        CREATE INDEX alarms_by_pump ON alarms (pump_id, raised_at);

        CREATE TABLE maintenance_records (
            record_id INTEGER PRIMARY KEY,
            pump_id TEXT NOT NULL REFERENCES pumps (pump_id),
            performed_on TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('preventive', 'corrective', 'inspection')),
            description TEXT NOT NULL,
            technician TEXT
        );
        CREATE INDEX maintenance_by_pump ON maintenance_records (pump_id, performed_on);
        """,
    ),
    Migration(
        2,
        "ingest manifest",
        """
        CREATE TABLE ingest_manifest (
            collection TEXT NOT NULL,
            source TEXT NOT NULL,
            chunk_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            ingested_at TEXT NOT NULL,
            PRIMARY KEY (collection, source, chunk_id)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        3,
        "audit log",
        # Hash-chained, append-only by convention (governance/audit_log.py). UNIQUE (prev_hash) makes a
        # forked chain impossible even if a writer ignored the BEGIN IMMEDIATE protocol.
        """
        CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            principal TEXT NOT NULL,
            session TEXT,
            door TEXT NOT NULL,
            function TEXT NOT NULL,
            effect TEXT CHECK (effect IN ('read', 'write')),
            arguments TEXT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'denied', 'pending_approval', 'rejected')),
            detail TEXT,
            duration_ms REAL,
            result_digest TEXT,
            prev_hash TEXT NOT NULL UNIQUE,
            row_hash TEXT NOT NULL UNIQUE
        );
        CREATE INDEX audit_by_function ON audit_log (function, at);
        CREATE INDEX audit_by_principal ON audit_log (principal, at)
        """,
    ),
    Migration(
        4,
        "chat sessions",
        """
        CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            principal TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE session_messages (
            session_id TEXT NOT NULL REFERENCES sessions (session_id),
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            message TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )
        """,
    ),
    Migration(
        5,
        "approvals, idempotency and work orders",
        """
        CREATE TABLE approvals (
            approval_id TEXT PRIMARY KEY,
            function TEXT NOT NULL,
            arguments TEXT NOT NULL,
            args_hash TEXT NOT NULL,
            intent_key TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'executed', 'rejected')),
            requested_by TEXT NOT NULL,
            session TEXT,
            requested_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            decided_by TEXT,
            decided_at TEXT,
            reason TEXT,
            executed_at TEXT,
            result TEXT
        );
        CREATE INDEX approvals_by_intent ON approvals (intent_key, status);
        CREATE INDEX approvals_by_status ON approvals (status, requested_at);

        CREATE TABLE idempotency (
            intent_key TEXT PRIMARY KEY,
            function TEXT NOT NULL,
            result TEXT NOT NULL,
            created_at TEXT NOT NULL
        );

        CREATE TABLE work_orders (
            work_order_id TEXT PRIMARY KEY,
            pump_id TEXT NOT NULL REFERENCES pumps (pump_id),
            priority TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
            summary TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'closed')),
            created_at TEXT NOT NULL,
            requested_by TEXT NOT NULL,
            approved_by TEXT,
            approval_id TEXT UNIQUE REFERENCES approvals (approval_id)
        );
        CREATE INDEX work_orders_by_pump ON work_orders (pump_id, status)
        """,
    ),
    Migration(
        6,
        "telemetry sources and alarm triage",
        """
        CREATE TABLE telemetry_sources (
            name TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('mqtt', 'opcua')),
            state TEXT NOT NULL CHECK (state IN ('connecting', 'connected', 'failed', 'stopped')),
            detail TEXT,
            received INTEGER NOT NULL DEFAULT 0,
            malformed INTEGER NOT NULL DEFAULT 0,
            last_value_at TEXT,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE alarm_triage (
            alarm_id TEXT PRIMARY KEY REFERENCES alarms (alarm_id),
            status TEXT NOT NULL CHECK (status IN ('triaged', 'batched', 'skipped', 'failed')),
            reason TEXT,
            urgency TEXT,
            batch_id TEXT,
            result TEXT,
            recorded_at TEXT NOT NULL
        );
        CREATE INDEX alarms_by_sensor ON alarms (pump_id, sensor_type, active)
        """,
    ),
    Migration(
        7,
        "alarm origin",
        # Who raised an alarm: 'telemetry' for twin.alarm_rules (so a restart finds the alarms it may clear);
        # NULL for alarms loaded, generated or imported into the registry.
        """
        ALTER TABLE alarms ADD COLUMN origin TEXT
        """,
    ),
    Migration(
        8,
        "approval preconditions and decommissioned pumps",
        # preconditions: the plant state a parked write assumed (JSON list, governance/preconditions.py), re-checked
        # by the write inside its transaction. refused_at: set when that re-check refused it; the row is then stored
        # as 'rejected' (the status CHECK of migration 5 stays) and reported as 'refused'. decommissioned_at: a pump
        # taken out of service for good; no write may target it.
        """
        ALTER TABLE approvals ADD COLUMN preconditions TEXT;
        ALTER TABLE approvals ADD COLUMN refused_at TEXT;
        ALTER TABLE pumps ADD COLUMN decommissioned_at TEXT
        """,
    ),
    Migration(
        9,
        "refused telemetry nodes",
        # refused: the nodes a source's server refused on its last connect, as a JSON list of "node (reason)"
        # strings; NULL for none.
        """
        ALTER TABLE telemetry_sources ADD COLUMN refused TEXT
        """,
    ),
)


async def apply_migrations(db: Database) -> list[int]:
    """Apply every migration not yet recorded, each in its own write transaction; return the ids applied.

    The write lock makes this safe with several processes starting at once: each migration re-checks, under the
    lock, whether another process applied it while this one waited.
    """
    postgres = db.dialect.is_postgres
    async with db.transaction() as conn:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
    done = {row["id"] for row in await db.fetch_all("SELECT id FROM _migrations")}
    applied: list[int] = []
    for migration in MIGRATIONS:
        if migration.id in done:
            continue
        async with db.transaction() as conn:
            async with conn.execute("SELECT 1 FROM _migrations WHERE id = ?", (migration.id,)) as cursor:
                if await cursor.fetchone() is not None:
                    continue
            for statement in _statements(migration.sql):
                await conn.execute(ddl_to_postgres(statement) if postgres else statement)
            await conn.execute(
                "INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, ?)",
                (migration.id, migration.name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        applied.append(migration.id)
    return applied


def _statements(script: str) -> list[str]:
    """Split a migration script on semicolons (migrations hold no string literals with ';')."""
    return [part.strip() for part in script.split(";") if part.strip()]
