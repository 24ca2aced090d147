"""Persistence shared by the registry, the audit trail, approvals and sessions: an SQLite file or PostgreSQL."""

from storage.connection import DRIVER_ERRORS, INTEGRITY_ERRORS, Connection, Row
from storage.database import Database
from storage.dialect import Dialect
from storage.errors import StorageError
from storage.opening import open_database

__all__ = [
    "DRIVER_ERRORS",
    "INTEGRITY_ERRORS",
    "Connection",
    "Database",
    "Dialect",
    "Row",
    "StorageError",
    "open_database",
]
