"""What every settings section shares: frozen, unknown keys refused, keys spelled as `appsettings.json` spells them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A settings section: frozen, unknown keys refused, readable by field name or by its PascalCase key."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def alias(name: str) -> str:
    """The key a settings file uses for a field: ``stale_after_seconds`` -> ``StaleAfterSeconds``."""
    return "".join(part.capitalize() for part in name.split("_"))
