"""Fixtures for the telemetry tests: a source's collected readings and status reports, bounded waits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from telemetry.sources.base import SourceState, SourceStatus
from twin.readings import Reading

WAIT_SECONDS = 10.0


async def stop_source(task: asyncio.Task[None]) -> None:
    """Stop a source's ``run`` task as the service does: cancel it, and wait for it to end."""
    task.cancel()
    await task


class Collected:
    """What a running source handed on: its readings and its status reports, with bounded waits for either."""

    def __init__(self) -> None:
        self.readings: list[Reading] = []
        self.statuses: list[SourceStatus] = []
        self._changed = asyncio.Event()

    async def sink(self, reading: Reading) -> None:
        self.readings.append(reading)
        self._changed.set()

    async def on_status(self, status: SourceStatus) -> None:
        self.statuses.append(status)
        self._changed.set()

    @property
    def states(self) -> list[SourceState]:
        return [s.state for s in self.statuses]

    async def until(self, condition: Callable[[], bool], what: str) -> None:
        """Wait until ``condition()`` holds; fail naming ``what`` if it does not within WAIT_SECONDS."""

        async def wait() -> None:
            while not condition():
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(wait(), WAIT_SECONDS)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; states {self.states}") from None

    async def connected(self, times: int = 1) -> None:
        await self.until(lambda: self.states.count(SourceState.CONNECTED) >= times, f"connected x{times}")
