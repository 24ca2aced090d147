"""One automatic triage per database: the process that runs it holds an exclusive lock beside the database file.

Two dispatchers on one database would both triage each new alarm (twice the model's time, two reports). The lock
is an OS file lock (``flock``) on ``<database>.triage.lock``: the kernel releases it when the holder exits, however
it exits (SIGKILL included), so a crashed watcher never blocks the next one.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from core.errors import PumpOpsError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows, where the lease is not enforced
    fcntl = None  # type: ignore[assignment]


class TriageAlreadyRunning(PumpOpsError):
    """Another process already runs automatic triage on this database."""


class TriageLease:
    """The exclusive right to run automatic triage on one database, held from `acquire` to `release`."""

    def __init__(self, database: Path) -> None:
        self.path = database.with_name(database.name + ".triage.lock")
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lease, or raise naming the process that holds it.

        Raises:
            TriageAlreadyRunning: another process holds it (`pumpops telemetry` or `pumpops triage --watch`).
        """
        if fcntl is None or self._file is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise TriageAlreadyRunning(
                f"automatic triage already runs on this database (process {holder}: `pumpops telemetry` or "
                "`pumpops triage --watch`); one dispatcher per database triages each alarm once"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        """Give the lease up (closing the file releases the lock)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.seek(0)
                self._file.truncate()
            self._file.close()
            self._file = None
