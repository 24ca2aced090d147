"""The project's exception root, at the bottom of the house: every package's errors derive from it."""

from __future__ import annotations


class PumpOpsError(Exception):
    """Root of every error PumpOps raises on purpose; the message is written for its reader."""
