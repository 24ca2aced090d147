"""The project's exception root, at the bottom of the house: every package's errors derive from it."""

from __future__ import annotations


class PumpOpsError(Exception):
    """Root of every error PumpOps raises on purpose; the message is written for its reader."""


def sentence(text: str) -> str:
    """``text`` as one sentence ending in exactly one stop, ready to have another sentence joined after it.

    A message built around another message ("... failed: {cause}. Approve it again") must not read
    "nothing was executed.. Approve it again" when the inner message already ends a sentence.
    """
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", "…")) else f"{text}."
