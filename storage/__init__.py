"""SQLite persistence shared by the registry, the audit trail, approvals and sessions."""

from storage.database import Database
from storage.errors import PumpOpsError, StorageError

__all__ = ["Database", "PumpOpsError", "StorageError"]
