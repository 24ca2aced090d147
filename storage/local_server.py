"""A real PostgreSQL on this machine for trying PumpOps and for the tests: pgserver's binaries in a folder.

The server listens on a Unix socket in (or beside) its folder and on no network address; its URL carries the
socket folder (``postgresql://postgres:@/pumpops?host=/path``). Started as root, pgserver runs it as a system
user of its own (``pgserver``).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.urls import with_database

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass
class LocalPostgres:
    """A running server: the URL of any database on it, its version, and how to stop it."""

    admin_url: str
    version: str
    _server: Any

    def url(self, database: str) -> str:
        """The URL of ``database`` on this server."""
        return with_database(self.admin_url, database)

    def stop(self) -> None:
        """Stop the server (its files stay for the next start)."""
        self._server.cleanup()


def start_postgres(folder: Path, database: str | None = None) -> LocalPostgres:
    """Start (or join) the server whose files are in ``folder``, creating ``database`` on it when missing.

    Raises:
        ValueError: ``database`` is not a plain lower-case name.
        Exception: what pgserver raises when the server cannot start.
    """
    if database is not None and not _NAME.fullmatch(database):
        raise ValueError(f"{database!r} is not a plain lower-case database name such as pumpops")
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (as under CI and cron) and falls back to /tmp: harmless.
        warnings.simplefilter("ignore")
        import pgserver

        folder.mkdir(parents=True, exist_ok=True)
        server = pgserver.get_server(folder, cleanup_mode="stop")
    version = str(server.psql("SHOW server_version;")).split("\n")[2].strip() or "16"
    if database is not None:
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")
        if "(1 row)" not in str(exists):
            server.psql(f"CREATE DATABASE {database};")
    return LocalPostgres(admin_url=server.get_uri(), version=version, _server=server)
