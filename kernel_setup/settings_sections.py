"""What every settings section shares: frozen, unknown keys refused, keys spelled as `appsettings.json` spells them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A settings section: frozen, unknown keys refused, readable by field name or by its PascalCase key."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def alias(name: str) -> str:
    """The key a settings file uses for a field: ``stale_after_seconds`` -> ``StaleAfterSeconds``."""
    return "".join(part.capitalize() for part in name.split("_"))


def comma_separated(value: Any) -> Any:
    """A list from an environment value such as ``a.example,b.example``; a list (the JSON form) as it is."""
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
