"""The Qdrant client's lifecycle: opened lazily, shared by concurrent users, let go of when idle.

One code path for the three modes: ``:memory:`` (tests), a local folder (the default; Qdrant takes an
exclusive lock on it, so it is closed after `IndexConfig.idle_release_seconds` without use and other
processes may take their turn), and a server URL (shared by any number of processes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from qdrant_client import AsyncQdrantClient

from memory.config import IndexConfig, StoreMode
from memory.errors import IndexLockedError, IndexUnavailableError
from memory.locking import clear_owner, describe_holder, is_locked, write_owner

logger = logging.getLogger(__name__)

_LOCKED_MARKER = "already accessed by another instance"


def _locked(folder: Path) -> IndexLockedError:
    return IndexLockedError(
        f"The manuals index folder (Qdrant.Path) is in use by {describe_holder(folder)}. Qdrant local mode lets "
        "one process at a time open it: wait for that process to finish or stop it, or run a Qdrant server and set "
        "Qdrant.Url (e.g. PUMPOPS_Qdrant__Url=http://127.0.0.1:6333) so several processes can share the index."
    )


class QdrantConnection:
    """Owns one `AsyncQdrantClient`: open on first `lease`, closed on `close` or (on disk) when idle."""

    def __init__(self, config: IndexConfig) -> None:
        self.config = config
        self._client: AsyncQdrantClient | None = None
        self._users = 0
        self._lock = asyncio.Lock()
        self._release_timer: asyncio.TimerHandle | None = None
        self._release_task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def is_open(self) -> bool:
        """True while a client is open (on disk: while this process holds the folder lock)."""
        return self._client is not None

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[AsyncQdrantClient]:
        """Use the client for one operation; opens it when needed.

        Raises:
            IndexLockedError: local mode and another process holds the folder.
            IndexUnavailableError: the store cannot be opened.
        """
        if self._closed:
            raise IndexUnavailableError("The manuals index has been closed; open a new one.")
        self._cancel_timer()
        async with self._lock:
            if self._client is None:
                self._client = self._open()
            self._users += 1
            client = self._client
        try:
            yield client
        finally:
            self._users -= 1
            if self._users == 0:
                self._schedule_release()

    async def release(self) -> None:
        """Close the client now if nobody is using it (it reopens on the next lease)."""
        async with self._lock:
            if self._users == 0 and self._client is not None:
                client, self._client = self._client, None
                await self._close_client(client)

    async def close(self) -> None:
        """Close for good: cancel the idle timer, wait for a release in flight, close the client."""
        self._closed = True
        self._cancel_timer()
        task, self._release_task = self._release_task, None
        if task is not None:
            await task
        async with self._lock:
            client, self._client = self._client, None
        if client is not None:
            await self._close_client(client)

    def _open(self) -> AsyncQdrantClient:
        config = self.config
        mode = config.mode
        try:
            if mode is StoreMode.SERVER:
                # No compatibility probe: it is a blocking request on a background thread at construction.
                return AsyncQdrantClient(url=config.url, api_key=config.api_key, check_compatibility=False)
            if mode is StoreMode.MEMORY:
                return AsyncQdrantClient(location=config.path)
            folder = Path(config.path)
            if is_locked(folder):
                raise _locked(folder)
            client = AsyncQdrantClient(path=str(folder))
        except RuntimeError as exc:
            if _LOCKED_MARKER in str(exc):
                raise _locked(Path(config.path)) from exc
            raise IndexUnavailableError(f"Cannot open the manuals index: {exc}") from exc
        except (OSError, ValueError) as exc:
            raise IndexUnavailableError(f"Cannot open the manuals index: {exc}") from exc
        write_owner(folder)
        return client

    async def _close_client(self, client: AsyncQdrantClient) -> None:
        await client.close()
        if self.config.mode is StoreMode.DISK:
            clear_owner(Path(self.config.path))

    def _schedule_release(self) -> None:
        if self.config.mode is not StoreMode.DISK or self._closed:
            return
        self._cancel_timer()
        loop = asyncio.get_running_loop()
        self._release_timer = loop.call_later(self.config.idle_release_seconds, self._start_release)

    def _start_release(self) -> None:
        self._release_timer = None
        if self._release_task is None or self._release_task.done():
            self._release_task = asyncio.get_running_loop().create_task(self._release_when_idle())

    async def _release_when_idle(self) -> None:
        try:
            await self.release()
        except Exception:  # a background release must not die silently; the next lease reopens anyway
            logger.exception("Closing the idle manuals index failed")

    def _cancel_timer(self) -> None:
        if self._release_timer is not None:
            self._release_timer.cancel()
            self._release_timer = None
