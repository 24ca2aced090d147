"""What a function does to the world, as the audit trail and the approval policy name it."""

from __future__ import annotations

from enum import Enum


class Effect(str, Enum):
    """Whether a function only reads or changes a record."""

    READ = "read"
    WRITE = "write"
