"""Batching live readings into the registry: a batch is written when it is full or its oldest reading waited long.

Rules:
- `Batcher.put` holds a reading; once ``batch_size`` are held it writes them at once (the source waits, which
  slows a source that outruns the database instead of holding readings without bound).
- `Batcher.run` writes what is held once the oldest held reading has waited ``flush_seconds``, until closed.
- `Batcher.close` writes what is held, then stops `run`.
- A batch the store fails to write is logged and tried once more at the next flush; failing again, it is
  dropped with an error naming how many readings were lost. Nothing is dropped without a log line.
- ``on_stored`` hears every written batch (the telemetry service passes the inserted readings to the alarm
  rules); its failure is logged and does not undo or stop the writing.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable

from storage import StorageError
from twin.readings import Reading, ReadingStore, StoredBatch

logger = logging.getLogger(__name__)

OnStored = Callable[[StoredBatch], Awaitable[None]]


class Batcher:
    """Collects readings from the sources and writes them through a `ReadingStore` in batches."""

    def __init__(
        self, store: ReadingStore, *, batch_size: int, flush_seconds: float, on_stored: OnStored | None = None
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size!r}")
        if flush_seconds <= 0:
            raise ValueError(f"flush_seconds must be above 0, got {flush_seconds!r}")
        self._store = store
        self._batch_size = batch_size
        self._flush_seconds = flush_seconds
        self._on_stored = on_stored
        self._held: list[Reading] = []
        self._held_since: float | None = None  # loop time the oldest held reading (or a failed batch) waits from
        self._retry: list[Reading] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._closed = False
        self.stored = 0
        """Readings written so far."""
        self.duplicates = 0
        """Readings dropped because their sensor already had a reading at that second."""
        self.unknown = 0
        """Readings dropped because the registry has no such pump or sensor."""

    @property
    def held(self) -> int:
        """Readings waiting to be written (a failed batch awaiting its retry included)."""
        return len(self._held) + len(self._retry)

    async def put(self, reading: Reading) -> None:
        """Hold one reading (the sources' sink); write the batch when it is full."""
        if self._closed:
            raise RuntimeError("the batcher is closed; readings can no longer be written")
        if not self._held and self._held_since is None:
            self._held_since = asyncio.get_running_loop().time()
            self._wake.set()  # `run` now has a deadline to wait for
        self._held.append(reading)
        if len(self._held) >= self._batch_size:
            await self.flush()

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
        """Write what is held (a pending retry included), then stop `run`."""
        self._closed = True
        self._wake.set()
        await self.flush()

    async def flush(self) -> None:
        """Write a pending retry, then what is held now, each as its own batch."""
        async with self._lock:
            if self._retry:
                retry, self._retry = self._retry, []
                if not await self._write(retry, again=True):
                    logger.error(
                        "dropped %d readings: the database refused them twice (see the errors above)", len(retry)
                    )
            batch, self._held = self._held, []
            self._held_since = None
            if batch and not await self._write(batch, again=False):
                self._retry = batch
                self._held_since = asyncio.get_running_loop().time()  # retried after flush_seconds at the latest

    async def _write(self, batch: list[Reading], *, again: bool) -> bool:
        """Store one batch and tell ``on_stored``; False when the store failed (logged)."""
        try:
            result = await self._store.store(batch)
        except (sqlite3.Error, StorageError):
            # Logged with its traceback; the batch is kept for one more try (or, on that try, reported dropped).
            logger.exception(
                "could not write %d readings%s", len(batch), "" if again else "; trying once more at the next flush"
            )
            return False
        self.stored += len(result.inserted)
        self.duplicates += result.duplicates
        self.unknown += result.unknown
        if self._on_stored is not None:
            try:
                await self._on_stored(result)
            except Exception:
                # The boundary between storing and what reacts to it: the batch is written; a failing listener
                # (the alarm rules) is logged and must not stop live data from being stored.
                logger.exception("handling %d stored readings failed", len(result.inserted))
        return True
