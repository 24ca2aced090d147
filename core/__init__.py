"""The bottom of the house: what every package may import and nothing else (the exception root)."""

from core.errors import PumpOpsError, sentence

__all__ = ["PumpOpsError", "sentence"]
