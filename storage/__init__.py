"""SQLite persistence shared by the registry, the audit trail, approvals and sessions."""

from storage.database import Database
from storage.errors import StorageError

__all__ = ["Database", "StorageError"]
