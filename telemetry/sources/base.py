"""What every live source shares: the sinks it hands readings and status to, its states, and reconnecting.

A source runs until cancelled. It connects, hands each value on as a `Reading`, and when the connection fails or
drops it reports ``failed`` with a short detail, waits (exponential backoff with jitter between the configured
minimum and maximum, back to the minimum after a connection succeeds) and connects again. Cancelled, it reports
``stopped`` and returns.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import Protocol

from twin.readings import Reading

logger = logging.getLogger(__name__)

ReadingSink = Callable[[Reading], Awaitable[None]]
"""Where a source hands each reading (the telemetry service's `Batcher.put`)."""


class SourceState(str, Enum):
    """Where a source stands with its server or broker."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class SourceStatus:
    """A snapshot of one source: its state, why it failed, and what it has received since it started."""

    name: str
    kind: str
    state: SourceState
    detail: str = ""
    received: int = 0
    malformed: int = 0
    last_value_at: datetime | None = None
    refused: tuple[str, ...] = ()
    """What the server refused on the last connect, each ``"<node> (<reason>)"`` (an OPC UA node it lacks)."""


StatusSink = Callable[[SourceStatus], Awaitable[None]]
"""Where a source reports each change of state (and the counters at that moment)."""


class Source(Protocol):
    """A live, read-only source of pump readings."""

    @property
    def name(self) -> str:
        """The source's configured name (``station1-plc``)."""
        ...

    @property
    def kind(self) -> str:
        """``mqtt`` or ``opcua``."""
        ...

    def status(self) -> SourceStatus:
        """The source's state and counters now."""
        ...

    async def run(self, sink: ReadingSink, on_status: StatusSink) -> None:
        """Hand readings to ``sink`` and state changes to ``on_status`` until cancelled; then report stopped."""
        ...


class Backoff:
    """Delays between reconnect attempts: doubling from ``minimum`` up to ``maximum``, each with jitter.

    A delay is drawn uniformly from the upper half of the current step (never below ``minimum``), so sources that
    lost the same broker at the same moment do not all come back at once.
    """

    def __init__(self, minimum: float, maximum: float, *, rng: random.Random | None = None) -> None:
        if minimum <= 0 or maximum < minimum:
            raise ValueError(f"backoff needs 0 < minimum <= maximum, got {minimum} and {maximum}")
        self._minimum = minimum
        self._maximum = maximum
        self._attempt = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        """The delay before the next attempt; each call moves one step up."""
        step = min(self._maximum, self._minimum * 2**self._attempt)
        self._attempt = min(self._attempt + 1, 62)
        return max(self._minimum, self._rng.uniform(step / 2, step))

    def reset(self) -> None:
        """Start again from the minimum (after a successful connection)."""
        self._attempt = 0


class SourceFailure(Exception):
    """A connection attempt or a live connection failed; the message is the short detail a status shows."""


class ReconnectingSource:
    """The run loop every source shares: connect, stream, report, back off, connect again.

    A subclass implements `_stream`, which connects, calls ``connected()`` once it is subscribed, hands readings to
    the sink, and returns or raises `SourceFailure` (or one of `_failures`) when the connection ends.
    """

    kind = "source"
    _failures: tuple[type[BaseException], ...] = (SourceFailure, OSError, TimeoutError)

    def __init__(self, name: str, *, reconnect_min: float, reconnect_max: float) -> None:
        self._name = name
        self._backoff = Backoff(reconnect_min, reconnect_max)
        self._status = SourceStatus(name=name, kind=self.kind, state=SourceState.CONNECTING)
        self._logged_errors: set[str] = set()
        self._logged_malformed: set[str] = set()

    @property
    def name(self) -> str:
        """The source's configured name."""
        return self._name

    def status(self) -> SourceStatus:
        """The source's state and counters now."""
        return self._status

    async def run(self, sink: ReadingSink, on_status: StatusSink) -> None:
        """Stream readings into ``sink`` until cancelled, reconnecting with backoff; returns cleanly when cancelled."""

        async def report(state: SourceState, detail: str = "") -> None:
            self._status = replace(self._status, state=state, detail=detail)
            await on_status(self._status)

        async def connected() -> None:
            self._backoff.reset()
            self._logged_errors.clear()
            logger.info("%s source %r connected", self.kind, self._name)
            await report(SourceState.CONNECTED)

        try:
            while True:
                await report(SourceState.CONNECTING)
                try:
                    await self._stream(sink, connected)
                    detail = "connection closed"
                except self._failures as exc:
                    detail = _short(exc)
                # One log line per distinct error, not one per retry: a broker down for an hour logs once.
                if detail not in self._logged_errors:
                    self._logged_errors.add(detail)
                    logger.warning("%s source %r failed: %s; reconnecting", self.kind, self._name, detail)
                await report(SourceState.FAILED, detail)
                await asyncio.sleep(self._backoff.next_delay())
        except asyncio.CancelledError:
            # The agreed contract: a cancelled source reports `stopped` and returns instead of raising.
            await on_status(replace(self._status, state=SourceState.STOPPED, detail=""))
            self._status = replace(self._status, state=SourceState.STOPPED, detail="")

    async def _stream(self, sink: ReadingSink, connected: Callable[[], Awaitable[None]]) -> None:
        raise NotImplementedError

    async def _deliver(self, sink: ReadingSink, reading: Reading) -> None:
        """Count ``reading`` and hand it to ``sink``."""
        self._status = replace(self._status, received=self._status.received + 1, last_value_at=reading.at)
        await sink(reading)

    def _refused(self, refused: list[str]) -> None:
        """Keep what the server refused on this connect (replacing the last connect's); `connected` reports it."""
        self._status = replace(self._status, refused=tuple(refused))

    def _malformed(self, reason: str, detail: str) -> None:
        """Count a value that cannot be a reading; log the first of each ``reason`` (a short key) only."""
        self._status = replace(self._status, malformed=self._status.malformed + 1)
        if reason not in self._logged_malformed:
            self._logged_malformed.add(reason)
            logger.warning("%s source %r skipped a malformed value (%s): %s", self.kind, self._name, reason, detail)


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    text = text.splitlines()[0]
    return text if len(text) <= 200 else text[:197] + "..."
