"""Errors of a plant import: a whole file or the whole run cannot go ahead."""

from __future__ import annotations

from twin.errors import RegistryError


class PlantImportError(RegistryError):
    """A file or folder cannot be imported at all (missing, unreadable, wrong columns, bad option)."""


class BadValueError(ValueError):
    """One field of one row is refused; the message says why and what is accepted."""
