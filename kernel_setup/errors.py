"""Errors raised by the composition root and its doors."""

from __future__ import annotations

from core.errors import PumpOpsError


class SettingsError(PumpOpsError):
    """Settings could not be found, read or validated."""


class ToolCallError(PumpOpsError):
    """A direct tool call named an unknown function or carried bad arguments."""


class McpListenError(PumpOpsError):
    """The MCP server cannot listen on the address and port asked for (in use, not this machine's)."""
