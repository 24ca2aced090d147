"""The live telemetry service: every configured source feeds one batcher; each stored batch goes past the alarm rules.

Sources run side by side: one that fails reconnects with backoff on its own while the others go on. Stopping
(the ``stop`` event: Ctrl-C or SIGTERM at the CLI) stops the sources first, then writes what the batcher holds,
then the sources' last statuses, so nothing received before the stop is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from kernel_setup.plant_settings import AlarmSettings, TelemetrySettings
from storage import Database
from telemetry.batching import Batcher
from telemetry.sources import build_sources
from telemetry.sources.base import Source, SourceState
from telemetry.status import StatusBoard
from twin.alarm_rules import AlarmRules
from twin.readings import ReadingStore, StoredBatch

logger = logging.getLogger(__name__)

STATUS_WRITE_SECONDS = 1.0
"""How often the sources' counters are written to ``telemetry_sources`` (a change of state is written at once)."""

RaisedHandler = Callable[[list[str]], Awaitable[None]]


@dataclass
class ServiceCounts:
    """What one run of the service did."""

    stored: int = 0
    duplicates: int = 0
    unknown: int = 0
    alarms_raised: int = 0


class TelemetryService:
    """Reads the configured sources into the registry and raises and clears alarms from what it stores."""

    def __init__(
        self,
        db: Database,
        telemetry: TelemetrySettings,
        alarms: AlarmSettings,
        *,
        sources: Sequence[Source] | None = None,
        on_raised: RaisedHandler | None = None,
    ) -> None:
        """Build the service; nothing starts before `run`.

        Args:
        db: The open registry.
        telemetry: Batching and reconnect settings, and the sources unless ``sources`` is given.
        alarms: The alarm rules' durations, deadband and levels.
        sources: The sources to read (default: those ``telemetry`` configures).
        on_raised: Called with the ids of the alarms each stored batch raised.
        """
        self._db = db
        self._telemetry = telemetry
        self._alarms = alarms
        self._sources = list(sources) if sources is not None else build_sources(telemetry)
        self._on_raised = on_raised
        self._rules: AlarmRules | None = None
        self.board = StatusBoard(db)
        self.counts = ServiceCounts()

    @property
    def sources(self) -> list[Source]:
        """The sources this service reads."""
        return list(self._sources)

    async def run(self, stop: asyncio.Event) -> ServiceCounts:
        """Read until ``stop`` is set, then stop the sources, write what is held and return the counts."""
        await self.board.forget_others({source.name for source in self._sources})
        self._rules = AlarmRules(
            self._db,
            raise_after_seconds=self._alarms.raise_after_seconds,
            clear_after_seconds=self._alarms.clear_after_seconds,
            deadband_percent=self._alarms.deadband_percent,
            levels=self._alarms.levels,
        )
        await self._rules.start()
        batcher = Batcher(
            ReadingStore(self._db),
            batch_size=self._telemetry.batch_size,
            flush_seconds=self._telemetry.flush_seconds,
            on_stored=self._stored,
        )
        batching = asyncio.create_task(batcher.run(), name="telemetry-batcher")
        reading = [
            asyncio.create_task(self._read(source, batcher), name=f"telemetry-{source.name}")
            for source in self._sources
        ]
        statuses = asyncio.create_task(self._write_statuses(), name="telemetry-status")
        try:
            await stop.wait()
        finally:
            for task in reading:
                task.cancel()
            await asyncio.gather(*reading, return_exceptions=True)
            await batcher.close()
            await _finish(batching)
            statuses.cancel()
            await asyncio.gather(statuses, return_exceptions=True)
            for source in self._sources:
                self.board.note(source.status())
            await self.board.flush()
        return self.counts

    async def _read(self, source: Source, batcher: Batcher) -> None:
        try:
            await source.run(batcher.put, self.board.report)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a source bug must not stop the others; it is reported, not hidden
            logger.exception("telemetry source %s stopped on an unexpected error", source.name)
            detail = f"stopped on an unexpected error: {type(exc).__name__}: {exc}"[:300]
            await self.board.report(replace(source.status(), state=SourceState.FAILED, detail=detail))

    async def _stored(self, batch: StoredBatch) -> None:
        self.counts.stored += len(batch.inserted)
        self.counts.duplicates += batch.duplicates
        self.counts.unknown += batch.unknown
        if self._rules is None or not batch.inserted:
            return
        raised = await self._rules.observe(batch.inserted)
        if raised:
            self.counts.alarms_raised += len(raised)
            logger.info("alarms raised from telemetry: %s", ", ".join(raised))
            if self._on_raised is not None:
                await self._on_raised(raised)

    async def _write_statuses(self) -> None:
        while True:
            await asyncio.sleep(STATUS_WRITE_SECONDS)
            for source in self._sources:  # the counters move with every message; states arrive by `report`
                if source.name in self.board.latest:
                    self.board.note(source.status())
            try:
                await self.board.flush()
            except Exception:  # the status table is a report: a failed write is logged and tried again
                logger.exception("could not write the telemetry sources' status")


async def _finish(task: asyncio.Task[None]) -> None:
    """Wait for the batcher's loop to end after its close; cancel it if it does not within a few seconds."""
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout=5)
    except TimeoutError:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
