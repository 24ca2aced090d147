"""One automatic triage per database: the process that runs it holds an exclusive lock that ends when it exits.

Two dispatchers on one database would both triage each new alarm (twice the model's time, two reports).

- SQLite: an OS file lock (``flock``) on ``<database>.triage.lock``, holding the holder's process id.
- PostgreSQL: a session-level advisory lock on a connection of its own; the holder's process id is its
  ``application_name``.

Either way the lock ends with the holder, however it exits (SIGKILL included: the kernel closes the file, the
server ends the session), so a crashed watcher never blocks the next one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

import asyncpg

from core.errors import PumpOpsError
from storage.urls import is_postgres_url

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows, where the lease is not enforced
    fcntl = None  # type: ignore[assignment]

TRIAGE_LOCK_KEY = 0x54524941  # "TRIA": the advisory lock of the triage lease (the write lock is another key)
_APPLICATION = "pumpops-triage"


class TriageAlreadyRunning(PumpOpsError):
    """Another process already runs automatic triage on this database."""


def _refusal(holder: str) -> TriageAlreadyRunning:
    return TriageAlreadyRunning(
        f"automatic triage already runs on this database (process {holder}: `pumpops telemetry` or "
        "`pumpops triage --watch`); one dispatcher per database triages each alarm once"
    )


class TriageLease:
    """The exclusive right to run automatic triage on one database, held from `acquire` to `release`."""

    def __init__(self, database: str | Path) -> None:
        self._url = str(database).strip() if is_postgres_url(database) else None
        path = Path(database)
        self.path = path.with_name(path.name + ".triage.lock") if self._url is None else None
        self._file: IO[str] | None = None
        self._connection: asyncpg.Connection | None = None

    async def acquire(self) -> None:
        """Take the lease, or raise naming the process that holds it.

        Raises:
            TriageAlreadyRunning: another process holds it (`pumpops telemetry` or `pumpops triage --watch`).
        """
        if self._url is not None:
            await self._acquire_advisory(self._url)
        else:
            self._acquire_file()

    async def release(self) -> None:
        """Give the lease up (closing the file or the session releases the lock)."""
        if self._connection is not None:
            connection, self._connection = self._connection, None
            with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                await connection.close()
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.seek(0)
                self._file.truncate()
            self._file.close()
            self._file = None

    async def _acquire_advisory(self, url: str) -> None:
        if self._connection is not None:
            return
        name = f"{_APPLICATION} {os.getpid()}"
        connection = await asyncpg.connect(url, server_settings={"application_name": name})
        try:
            taken = await connection.fetchval("SELECT pg_try_advisory_lock($1)", TRIAGE_LOCK_KEY)
            if not taken:
                holder = await connection.fetchval(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.objid = $1 AND l.granted LIMIT 1",
                    TRIAGE_LOCK_KEY,
                )
                pid = str(holder or "").removeprefix(_APPLICATION).strip() or "another process"
                raise _refusal(pid)
        except BaseException:
            await connection.close()
            raise
        self._connection = connection

    def _acquire_file(self) -> None:
        if fcntl is None or self._file is not None or self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise _refusal(holder) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle
