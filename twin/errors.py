"""Errors of the asset registry, worded for the model or operator who must recover from them."""

from __future__ import annotations

from storage.errors import PumpOpsError


class RegistryError(PumpOpsError):
    """A registry query could not be answered."""


class NotFoundError(RegistryError):
    """No record has the identifier given."""


class InvalidInputError(RegistryError):
    """An argument is outside what the registry accepts."""
