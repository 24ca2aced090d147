"""PostgreSQL at the doors: `pumpops db copy`, the errors of a bad URL, and the settings that show the backend.

Each test runs on the session's real PostgreSQL (tests/postgres_server.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from governance.audit_log import AuditLog, AuditOutcome
from kernel_setup import load_settings
from kernel_setup.local_identity import os_user
from storage import open_database
from storage.copy import TABLES, copy_database, count_rows
from tests.cli_process import run_pumpops
from tests.postgres_server import PostgresServer, fresh_database
from twin.generator import generate_fleet
from twin.sample_fleet import load_sample_fleet

EXIT_USAGE = 2
PASSWORD = "s3cret-Pa55"


def write_settings(folder: Path, url: str | None = None) -> Path:
    database: dict[str, str] = {"Path": "data/site.db"}
    if url is not None:
        database["Url"] = url
    path = folder / "appsettings.json"
    sections = {"Database": database, "Qdrant": {"Path": ":memory:"}, "Identity": {"Roles": {os_user(): ["auditor"]}}}
    path.write_text(json.dumps(sections))
    return path


async def filled_sqlite(path: Path) -> None:
    db = await open_database(path)
    try:
        await load_sample_fleet(db)
        await generate_fleet(db, 12, 30, seed=3)
        await AuditLog(db).record(
            function="assets-get_pump_details", arguments={"pump_id": "PUMP-001"}, outcome=AuditOutcome.OK
        )
    finally:
        await db.close()


async def test_every_table_of_the_schema_is_copied(tmp_path: Path) -> None:
    db = await open_database(tmp_path / "schema.db")
    try:
        rows = await db.fetch_all("SELECT name FROM sqlite_master WHERE type = 'table'")
    finally:
        await db.close()
    assert {row["name"] for row in rows} - {"_migrations"} == {table.name for table in TABLES}


async def test_db_copy_moves_every_row_and_the_audit_chain_into_an_empty_postgres(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    settings = write_settings(tmp_path)
    await filled_sqlite(tmp_path / "data" / "site.db")
    async with fresh_database(postgres_server) as url:
        result = run_pumpops(settings, "db", "copy", "--to", url, "--json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["audit_intact"] is True
        source = await open_database(tmp_path / "data" / "site.db")
        target = await open_database(url)
        try:
            expected = await count_rows(source)
            assert expected["readings"] > 1000 and expected["audit_log"] >= 1
            assert await count_rows(target) == expected == report["rows"]
            assert await AuditLog(target).verify() is None
            pump = "SELECT * FROM pumps ORDER BY pump_id"
            assert [tuple(r) for r in await target.fetch_all(pump)] == [tuple(r) for r in await source.fetch_all(pump)]
            # The copy goes on as a database: an id the database assigns continues after the copied ones.
            async with target.transaction() as conn:
                await conn.execute(
                    "INSERT INTO maintenance_records (pump_id, performed_on, kind, description) "
                    "VALUES ('PUMP-001', '2026-12-01', 'inspection', 'after the copy')"
                )
            await AuditLog(target).record(function="assets-get_system_summary", arguments={}, outcome=AuditOutcome.OK)
            assert await AuditLog(target).verify() is None
        finally:
            await source.close()
            await target.close()
        verified = run_pumpops(write_settings(tmp_path, url), "audit", "verify")
        assert verified.returncode == 0, verified.stderr

        again = run_pumpops(settings, "db", "copy", "--to", url)
        assert again.returncode == EXIT_USAGE
        assert "is not empty" in again.stderr and "pumps" in again.stderr


async def test_a_copy_into_a_non_empty_target_writes_nothing(postgres_server: PostgresServer, tmp_path: Path) -> None:
    source = await open_database(tmp_path / "s.db")
    await load_sample_fleet(source)
    async with fresh_database(postgres_server) as url:
        target = await open_database(url)
        try:
            await AuditLog(target).record(function="x", arguments={}, outcome=AuditOutcome.OK)
            with pytest.raises(Exception, match="not empty"):
                await copy_database(source, target)
            assert (await count_rows(target))["pumps"] == 0
        finally:
            await target.close()
            await source.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def password_role(postgres_server: PostgresServer) -> str:
    """A role that must give its password (scram), on the session's server: its pg_hba line added once."""
    admin = await asyncpg.connect(postgres_server.admin_url)
    try:
        hba = Path(await admin.fetchval("SHOW hba_file"))
        line = "local all pumpops_pw scram-sha-256\n"
        text = await asyncio.to_thread(hba.read_text)
        if line not in text:  # first match wins: only this role is asked for a password
            await asyncio.to_thread(hba.write_text, line + text)
            await admin.execute("SELECT pg_reload_conf()")
        if not await admin.fetchval("SELECT 1 FROM pg_roles WHERE rolname = 'pumpops_pw'"):
            await admin.execute(f"CREATE ROLE pumpops_pw LOGIN PASSWORD '{PASSWORD}'")
    finally:
        await admin.close()
    return "pumpops_pw"


def _with_user(url: str, user: str, password: str) -> str:
    """``url`` with its user and password replaced (whatever user, with or without a password, it had)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{host}"))


@pytest.mark.parametrize("case", ["server down", "wrong password", "no such database", "unreadable URL"])
def test_a_bad_database_url_is_one_line_naming_host_and_database_never_the_password(
    tmp_path: Path, postgres_server: PostgresServer, password_role: str, case: str
) -> None:
    url, expected = {
        "server down": (f"postgresql://bob:{PASSWORD}@127.0.0.1:{_free_port()}/plant", "127.0.0.1"),
        "wrong password": (
            _with_user(postgres_server.url("postgres"), password_role, PASSWORD + "x"),
            "refused the password",
        ),
        "no such database": (postgres_server.url("no_such_db"), "does not exist"),
        "unreadable URL": (f"postgresql://bob:{PASSWORD}@127.0.0.1:notaport/plant", "not a valid PostgreSQL URL"),
    }[case]
    result = run_pumpops(write_settings(tmp_path), "db", "init", env={"PUMPOPS_DATABASE__URL": url})
    assert result.returncode == EXIT_USAGE
    assert PASSWORD not in result.stdout + result.stderr
    message = result.stderr.strip()
    assert message.startswith("error: Cannot connect to PostgreSQL") and expected in message
    if case == "server down":
        assert "/plant" in message and "bob@" in message
    if case == "no such database":
        assert "/no_such_db" in message


async def test_the_right_password_connects(postgres_server: PostgresServer, password_role: str) -> None:
    async with fresh_database(postgres_server) as url:
        admin = await asyncpg.connect(url)
        try:
            await admin.execute(f"GRANT ALL ON SCHEMA public TO {password_role}")
            await admin.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {password_role}")
            await admin.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {password_role}")
        finally:
            await admin.close()
        db = await open_database(_with_user(url, password_role, PASSWORD))
        try:
            assert await db.fetch_one("SELECT COUNT(*) AS n FROM pumps") is not None
            assert PASSWORD not in db.description
        finally:
            await db.close()


def test_config_show_names_the_backend_and_masks_the_password(tmp_path: Path) -> None:
    url = f"postgresql://ops:{PASSWORD}@db.plant.example:5433/pumpops"
    settings = write_settings(tmp_path, url)
    shown = run_pumpops(settings, "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "Database in use: PostgreSQL ops@db.plant.example:5433/pumpops" in shown.stdout
    as_json = json.loads(run_pumpops(settings, "config", "show", "--json").stdout)
    assert as_json["Database"]["Url"] == "postgresql://ops:***@db.plant.example:5433/pumpops"
    assert PASSWORD not in shown.stdout
    assert load_settings(settings, env={}).database_target == url


def test_a_url_that_is_not_postgres_is_refused_without_echoing_its_password(tmp_path: Path) -> None:
    result = run_pumpops(
        write_settings(tmp_path), "config", "show", env={"PUMPOPS_DATABASE__URL": f"mysql://ops:{PASSWORD}@h/db"}
    )
    assert result.returncode == EXIT_USAGE
    assert "Database.Url must be a PostgreSQL URL" in result.stderr and PASSWORD not in result.stderr
