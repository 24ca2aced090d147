"""Errors of the asset registry, worded for the model or operator who must recover from them."""

from __future__ import annotations

from core.errors import PumpOpsError


class RegistryError(PumpOpsError):
    """A registry query could not be answered."""


class NotFoundError(RegistryError):
    """No record has the identifier given."""

    @classmethod
    def pump(cls, pump_id: str) -> NotFoundError:
        """The recovery message for an unknown pump id."""
        return cls(
            f"No pump found with id {pump_id[:80]!r}. Pump ids look like 'PUMP-007'. "
            "Call assets-list_pumps to see valid ids."
        )

    @classmethod
    def alarm(cls, alarm_id: str) -> NotFoundError:
        """The recovery message for an unknown alarm id."""
        return cls(
            f"No alarm found with id {alarm_id[:40]!r}. Alarm ids look like 'ALM-0001'. "
            "Call alarms-list_alarms with active_only false to see valid ids."
        )


class InvalidInputError(RegistryError):
    """An argument is outside what the registry accepts."""
