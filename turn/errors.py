"""Errors of the turn: the chat model failing, worded for the operator."""

from __future__ import annotations

from core.errors import PumpOpsError

__all__ = ["ChatServiceError"]


class ChatServiceError(PumpOpsError):
    """The chat model could not be reached or answered badly."""

    @classmethod
    def of(cls, exc: BaseException) -> ChatServiceError:
        """The error for ``exc``, naming it and up to three of its causes (at most 400 characters)."""
        cause: BaseException | None = exc
        texts: list[str] = []
        while cause is not None and len(texts) < 4:
            texts.append(str(cause))
            cause = cause.__cause__ or cause.__context__
        detail = " / ".join(t for t in texts if t)[:400]
        return cls(f"The chat model failed: {detail}")
