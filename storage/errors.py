"""Errors of the storage layer."""

from __future__ import annotations

from core.errors import PumpOpsError


class StorageError(PumpOpsError):
    """The SQLite database could not be opened, migrated or written."""
