"""A sliding-minute budget: at most N starts within any 60 seconds."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 60.0


class SlidingBudget:
    """Counts starts in the last `WINDOW_SECONDS`; a start is allowed while fewer than ``limit`` fall inside it."""

    def __init__(self, limit: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = limit
        self._clock = clock
        self._starts: deque[float] = deque()

    def left(self) -> int:
        """How many starts the window allows now."""
        now = self._clock()
        while self._starts and now - self._starts[0] >= WINDOW_SECONDS:
            self._starts.popleft()
        return max(0, self._limit - len(self._starts))

    def spend(self) -> None:
        """Count one start now (the caller checked `left` first)."""
        self._starts.append(self._clock())
