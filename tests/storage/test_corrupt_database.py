"""A damaged database file is an error that ends the command, never a hang (issue #27, finding 5).

aiosqlite runs each connection on a non-daemon thread; a connection left open on a failure path
keeps the process alive after the error is printed. These tests run the real CLI in a subprocess
with a timeout, so a hang fails the test instead of stalling the run.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_setup.local_identity import os_user
from storage import StorageError, open_database
from tests.cli_process import run_pumpops
from twin.sample_fleet import load_sample_fleet

EXIT_USAGE = 2
JOIN_TIMEOUT_S = 10  # an upper bound on a connection thread ending, never a synchronisation wait


def _garbage(good: bytes) -> bytes:
    return (b"this is not an SQLite file\n" * (len(good) // 27 + 1))[: len(good)]


def _zeroed_header(good: bytes) -> bytes:
    return bytes(100) + good[100:]


def _truncated(good: bytes) -> bytes:
    return good[: len(good) // 3]


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "garbage": _garbage,
    "zeroed header": _zeroed_header,
    "truncated": _truncated,
}


AUDITOR = {"Roles": {os_user(): ["auditor"]}}
"""The OS user running the CLI may read the audit trail (`pumpops audit` needs the role)."""


@pytest.fixture(scope="module")
def good_database(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a migrated database holding the sample fleet (its WAL checkpointed on close)."""
    path = tmp_path_factory.mktemp("good") / "good.db"

    async def build() -> None:
        db = await open_database(path)
        try:
            await load_sample_fleet(db)
        finally:
            await db.close()

    asyncio.run(build())
    assert not path.with_name("good.db-wal").exists()
    return path.read_bytes()


def _write_damaged(folder: Path, good: bytes, damage: str) -> Path:
    path = folder / "pumpops.db"
    path.write_bytes(DAMAGES[damage](good))
    settings = folder / "appsettings.json"
    sections = {"Database": {"Path": path.name}, "Qdrant": {"Path": ":memory:"}, "Identity": AUDITOR}
    settings.write_text(json.dumps(sections))
    return settings


def _connection_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
async def test_opening_a_damaged_file_raises_a_storage_error_and_leaves_no_connection_thread_running(
    tmp_path: Path, good_database: bytes, damage: str
) -> None:
    path = tmp_path / "pumpops.db"
    path.write_bytes(DAMAGES[damage](good_database))
    before = _connection_threads()
    with pytest.raises(StorageError, match=r"Cannot open the database .*pumpops db init"):
        await open_database(path)
    for thread in _connection_threads() - before:
        thread.join(timeout=JOIN_TIMEOUT_S)
    assert not [t for t in _connection_threads() - before if t.is_alive()]


async def test_a_failing_migration_closes_the_connection_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "clash.db"
    with sqlite3.connect(path) as conn:  # a table a migration creates, made by something else
        conn.execute("CREATE TABLE pumps (x)")
    conn.close()
    before = _connection_threads()
    with pytest.raises(StorageError, match="Cannot prepare the database"):
        await open_database(path)
    for thread in _connection_threads() - before:
        thread.join(timeout=JOIN_TIMEOUT_S)
    assert not [t for t in _connection_threads() - before if t.is_alive()]


@pytest.mark.parametrize("command", [("audit", "verify"), ("db", "init")], ids=" ".join)
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_cli_command_on_a_damaged_database_exits_2_with_one_error_line(
    tmp_path: Path, good_database: bytes, damage: str, command: tuple[str, ...]
) -> None:
    settings = _write_damaged(tmp_path, good_database, damage)
    result = run_pumpops(settings, *command)
    assert result.returncode == EXIT_USAGE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: Cannot open the database") and "pumpops db init" in lines[0]
    assert result.stdout == ""


def test_audit_verify_on_a_damaged_audit_page_exits_2_with_one_error_line(tmp_path: Path, good_database: bytes) -> None:
    path = tmp_path / "pumpops.db"
    path.write_bytes(good_database)
    with sqlite3.connect(path) as conn:
        root_page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'audit_log'").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    start = (root_page - 1) * page_size
    data[start : start + page_size] = b"\xff" * page_size  # the header is intact; one table's page is not
    path.write_bytes(bytes(data))
    settings = tmp_path / "appsettings.json"
    sections = {"Database": {"Path": path.name}, "Qdrant": {"Path": ":memory:"}, "Identity": AUDITOR}
    settings.write_text(json.dumps(sections))

    result = run_pumpops(settings, "audit", "verify")

    assert result.returncode == EXIT_USAGE, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Cannot read the database"), result.stderr
