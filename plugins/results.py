"""How plugin results reach the model: compact JSON text naming its subject."""

from __future__ import annotations

from pydantic import BaseModel


def to_json(result: BaseModel) -> str:
    """Compact JSON of a result model (SK sends ``str(result)`` to the model, so never a repr)."""
    return result.model_dump_json(exclude_none=False)
