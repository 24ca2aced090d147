"""Batching live readings into the registry: group commit, one transaction per write, the busier the fewer.

Rules:
- `Batcher.put` holds a reading. Once ``batch_size`` are held a write starts in the background (its own task);
  a write takes every reading held when it starts, so readings arriving while one is in flight go into the next,
  and under load transactions grow and commits become fewer instead of the sources waiting on each commit.
- A source waits only when `MAX_HELD_BATCHES` batches' worth are held (a write is in flight): memory stays
  bounded and a source that outruns the database is slowed, not buffered without limit.
- `Batcher.run` writes what is held once the oldest held reading has waited ``flush_seconds``, until closed.
- `Batcher.close` waits for the write in flight, writes what is held, then stops `run`.
- Writes never overlap: one transaction at a time, batches in the order their readings were taken.
- A batch the store fails to write is logged and tried once more at the next write; failing again, it is
  dropped with an error naming how many readings were lost. Nothing is dropped without a log line.
- ``on_stored`` hears every written batch, in the order written, one call at a time (the telemetry service
  passes the inserted readings to the alarm rules); it runs while the next batch is written, and a write
  waits for the call before it to end, so at most one is behind. Its failure is logged and does not undo or
  stop the writing. `wait_idle` and `close` return once every written batch has been heard.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from twin.readings import Reading, ReadingStore, StoredBatch

logger = logging.getLogger(__name__)

OnStored = Callable[[StoredBatch], Awaitable[None]]

MAX_HELD_BATCHES = 20
"""A source waits once this many ``batch_size`` batches' worth of readings are held (a write being in flight)."""


class Batcher:
    """Collects readings from the sources and writes them through a `ReadingStore`, one transaction per write."""

    def __init__(
        self, store: ReadingStore, *, batch_size: int, flush_seconds: float, on_stored: OnStored | None = None
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        if flush_seconds <= 0:
            raise ValueError(f"flush_seconds must be above 0, got {flush_seconds!r}")
        self._store = store
        self._batch_size = batch_size
        self._max_held = batch_size * MAX_HELD_BATCHES
        self._flush_seconds = flush_seconds
        self._on_stored = on_stored
        self._held: list[Reading] = []
        self._held_since: float | None = None  # loop time the oldest held reading (or a failed batch) waits from
        self._retry: list[Reading] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._taken = asyncio.Event()  # set whenever a write takes the held readings (a waiting source goes on)
        self._writer: asyncio.Task[None] | None = None
        self._hearing: asyncio.Task[None] | None = None  # ``on_stored`` of the last written batch
        self._closed = False
        self.stored = 0
        """Readings written so far."""
        self.duplicates = 0
        """Readings dropped because their sensor already had a reading at that second."""
        self.unknown = 0
        """Readings dropped because the registry has no such pump or sensor."""
        self.writes = 0
        """Transactions that stored readings so far (each write of a batch that had any)."""

    @property
    def held(self) -> int:
        """Readings waiting to be written (a failed batch awaiting its retry included, a write in flight not)."""
        return len(self._held) + len(self._retry)

    async def put(self, reading: Reading) -> None:
        """Hold one reading (the sources' sink); start a write once a batch is full; wait only when too many wait."""
        if self._closed:
            raise RuntimeError("the batcher is closed; readings can no longer be written")
        if not self._held and self._held_since is None:
            self._held_since = asyncio.get_running_loop().time()
            self._wake.set()  # `run` now has a deadline to wait for
        self._held.append(reading)
        if len(self._held) < self._batch_size:
            return
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_while_full(), name="telemetry-writer")
            await asyncio.sleep(0)  # the write takes this full batch now; what follows goes into the next
        while len(self._held) >= self._max_held and not self._closed:
            self._taken.clear()
            await self._taken.wait()

    async def wait_idle(self) -> None:
        """Wait until no write started by `put` is in flight and ``on_stored`` has heard every written batch."""
        while self._writer is not None:
            await asyncio.shield(self._writer)
        await self._heard()

    async def run(self) -> None:
        """Write held readings once the oldest has waited ``flush_seconds``; return when `close` is called."""
        loop = asyncio.get_running_loop()
        while not self._closed:
            if self._held_since is None:
                await self._wake.wait()
            else:
                remaining = self._held_since + self._flush_seconds - loop.time()
                if remaining > 0:
                    try:
                        await asyncio.wait_for(self._wake.wait(), remaining)
                    except TimeoutError:
                        pass
            self._wake.clear()
            if self._closed:
                break
            if self._held_since is not None and loop.time() - self._held_since >= self._flush_seconds:
                await self.flush()

    async def close(self) -> None:
        """Wait for the write in flight, write what is held (a pending retry included), then stop `run`."""
        self._closed = True
        self._wake.set()
        self._taken.set()
        await self.wait_idle()
        await self.flush()
        await self._heard()

    async def flush(self) -> None:
        """Write a pending retry, then what is held now, each as its own transaction (after any write in flight)."""
        async with self._lock:
            if self._retry:
                retry, self._retry = self._retry, []
                if not await self._write(retry, again=True):
                    logger.error(
                        "dropped %d readings: the database refused them twice (see the errors above)", len(retry)
                    )
            batch, self._held = self._held, []
            self._held_since = None
            self._taken.set()
            if batch and not await self._write(batch, again=False):
                self._retry = batch
                if self._held_since is None:  # retried after flush_seconds at the latest
                    self._held_since = asyncio.get_running_loop().time()
                    self._wake.set()

    async def _write_while_full(self) -> None:
        """The background writer `put` starts: write while a full batch is held (taking all), then end."""
        try:
            while len(self._held) >= self._batch_size:
                await self.flush()
        finally:
            self._writer = None

    async def _write(self, batch: list[Reading], *, again: bool) -> bool:
        """Store one batch and tell ``on_stored``; False when the store failed (logged)."""
        try:
            result = await self._store.store(batch)
        except Exception:
            # The writer is a background task with no caller to raise to: any failure (a refusing database, or a
            # bug) is logged with its traceback, and the batch kept for one more try (or, on that try, reported
            # dropped), so no reading is lost without a log line and the sources go on.
            logger.exception(
                "could not write %d readings%s", len(batch), "" if again else "; trying once more at the next flush"
            )
            return False
        self.stored += len(result.inserted)
        self.duplicates += result.duplicates
        self.unknown += result.unknown
        if result.inserted:
            self.writes += 1
        if self._on_stored is not None:
            await self._heard()  # one call at a time, in the order written
            self._hearing = asyncio.create_task(self._tell(self._on_stored, result), name="telemetry-on-stored")
        return True

    async def _heard(self) -> None:
        """Wait until the ``on_stored`` call of the last written batch (if any) has ended."""
        while (hearing := self._hearing) is not None:
            await asyncio.shield(hearing)
            if self._hearing is hearing:
                self._hearing = None

    @staticmethod
    async def _tell(on_stored: OnStored, result: StoredBatch) -> None:
        try:
            await on_stored(result)
        except Exception:
            # The boundary between storing and what reacts to it: the batch is written; a failing listener
            # (the alarm rules) is logged and must not stop live data from being stored.
            logger.exception("handling %d stored readings failed", len(result.inserted))
