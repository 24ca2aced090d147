"""The local model's prompt prefix kept on disk, so a new process does not read it again.

Every conversation with the local model opens with the same ~1,850 tokens (the tool list and the
system text up to its first fence line). On two cores reading them takes 35-90 s, which every new
process (each ``pumpops ask``) would pay. The llama.cpp KV state of a prompt is saved beside the
model file as plain arrays (``numpy.savez``, read back with ``allow_pickle=False``: nothing in it
can run) and restored when the model loads; llama.cpp then reads only what differs from it.

The file is tied to the exact model file (size and modification time), the context size, the
llama-cpp-python version and this module's `FORMAT`; any other file is ignored and replaced. Saving
is best effort: a read-only model folder only costs the cold start.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["FORMAT", "TAIL_TOKENS", "PromptCache", "covered", "worth_saving"]

# A saved prefix is good enough when it covers all of a prompt but its last TAIL_TOKENS tokens
# (the system text's fence lines, the question and a short history), or a quarter of a short prompt;
# otherwise the new prompt is saved.
TAIL_TOKENS = 512

# What a saved prefix holds; a file of another format is replaced. 2: only up to the first fence line
# (format 1 files also hold the fence marker of the turn that wrote them).
FORMAT = 2


def covered(saved: Sequence[int], tokens: Sequence[int]) -> int:
    """How many leading tokens of ``tokens`` the saved ids already hold."""
    count = 0
    for old, new in zip(saved, tokens, strict=False):
        if old != new:
            break
        count += 1
    return count


def worth_saving(saved: Sequence[int], tokens: Sequence[int]) -> bool:
    """Whether ``tokens`` should replace the saved prefix: it leaves more than the per-turn tail to read."""
    return covered(saved, tokens) < len(tokens) - min(TAIL_TOKENS, len(tokens) // 4)


@dataclass(frozen=True)
class PromptCache:
    """One state file beside a model file."""

    path: Path
    fingerprint: str

    @classmethod
    def beside(cls, model: Path, context_size: int, version: str) -> PromptCache:
        """The cache file of ``model`` (which must exist) for this context size and llama-cpp-python ``version``."""
        stat = model.stat()
        return cls(
            path=cls.file_of(model),
            fingerprint=f"{FORMAT}:{stat.st_size}:{stat.st_mtime_ns}:{context_size}:{version}",
        )

    @staticmethod
    def file_of(model: Path) -> Path:
        """Where the cache of ``model`` lives: beside it."""
        return model.with_name(model.name + ".prompt-cache.npz")

    def load(self) -> tuple[list[int], bytes] | None:
        """The saved token ids and KV state; None when there is no usable file."""
        try:
            with self.path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
                if str(data["fingerprint"]) != self.fingerprint:
                    return None
                return [int(t) for t in data["ids"]], data["kv"].tobytes()
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None

    def save(self, ids: Sequence[int], kv: bytes) -> bool:
        """Replace the file with ``ids`` and their KV state (atomically); False when it cannot be written."""
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            with temporary.open("wb") as handle:
                np.savez(
                    handle,
                    fingerprint=np.array(self.fingerprint),
                    ids=np.array(ids, dtype=np.int32),
                    kv=np.frombuffer(kv, dtype=np.uint8),
                )
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            return False
        return True
