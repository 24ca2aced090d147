"""Reading a database target: a PostgreSQL URL or an SQLite path, and a URL as people may see it (no password)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target: str | Path) -> bool:
    """Whether ``target`` names a PostgreSQL server (a URL) rather than an SQLite file (a path)."""
    return isinstance(target, str) and target.strip().lower().startswith(POSTGRES_SCHEMES)


def describe_url(url: str) -> str:
    """``user@host:port/database`` for messages: every part a reader needs to find the server, never the password.

    A server reached over a Unix socket (``?host=/run/postgresql``) is named by that folder.
    """
    try:
        parts = urlsplit(url.strip())
        socket = parse_qs(parts.query).get("host", [""])[0]
        host = parts.hostname or socket or "localhost"
        port = parts.port or 5432
    except ValueError:
        return "(an unreadable PostgreSQL URL)"
    user = f"{unquote(parts.username)}@" if parts.username else ""
    database = unquote(parts.path.lstrip("/")) or "(default database)"
    return f"{user}{host}:{port}/{database}"


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (for `pumpops config show` and logs)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "(an unreadable PostgreSQL URL)"
    if parts.password is None:
        return url.strip()
    user, host = parts.netloc.rsplit("@", 1)
    return parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}").geturl()


def with_database(url: str, database: str) -> str:
    """The same server and credentials, another database (the path of the URL replaced)."""
    parts = urlsplit(url.strip())
    return parts._replace(path=f"/{database}").geturl()
