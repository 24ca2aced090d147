"""Starting, watching and killing a child PumpOps process; what must hold in the database after a crash."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_setup import AppContext

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 90  # upper bound for a child to reach its kill point (it imports torch-free SK stack: ~5 s)

POLL_S = 0.05

Event = dict[str, Any]


class Child:
    """A child process running `tests.durability.child`, its JSON events read by a thread."""

    def __init__(self, args: list[str], *, pause: str, log: Path) -> None:
        self._log = log
        self._stderr = log.open("w")
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
        env["CRASH_TEST_PAUSE"] = pause
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.durability.child", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.events: list[Event] = []
        self._queue: queue.Queue[Event | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="child-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self._queue.put(json.loads(line))
            except ValueError:
                continue  # not one of our events
        self._queue.put(None)

    def wait_until(self, done: Callable[[list[Event]], bool], timeout: float = WAIT_S) -> list[Event]:
        """Collect events until ``done(events)``; fail with the child's stderr after ``timeout`` or at its exit."""
        deadline = time.monotonic() + timeout
        while not done(self.events):
            if time.monotonic() > deadline:
                raise AssertionError(f"the child never reached its kill point; events {self.events}; {self._tail()}")
            try:  # poll: ``done`` may also depend on something outside the child's output
                event = self._queue.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if event is None:
                raise AssertionError(f"the child exited before its kill point; events {self.events}; {self._tail()}")
            self.events.append(event)
        return self.events

    def kill(self) -> None:
        """SIGKILL: no cleanup, no flush, no atexit — the crash under test."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._reader.join(timeout=30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self._stderr.close()
        assert self.proc.returncode == -signal.SIGKILL, self._tail()

    def _tail(self) -> str:
        self._stderr.flush()
        return "stderr: " + self._log.read_text(errors="replace")[-2000:]


def paused(events: list[Event]) -> bool:
    return any(e["event"] == "paused" for e in events)


async def consistency_problems(app: AppContext) -> list[str]:
    """Records that contradict each other after a crash: an action both executed and pending, doubles, a bad chain."""
    problems = []
    bad = await app.audit.verify()
    if bad is not None:
        problems.append(f"audit chain broken at row {bad}")
    for row in await app.db.fetch_all(
        "SELECT approval_id, status FROM approvals a WHERE status != 'executed' AND ("
        "EXISTS (SELECT 1 FROM work_orders w WHERE w.approval_id = a.approval_id) OR "
        "EXISTS (SELECT 1 FROM idempotency i WHERE i.intent_key = a.intent_key))"
    ):
        problems.append(f"{row['approval_id']} is {row['status']} but its write exists")
    for row in await app.db.fetch_all(
        "SELECT approval_id FROM approvals WHERE status = 'executed' AND function = 'work_orders-create_work_order' "
        "AND approval_id NOT IN (SELECT approval_id FROM work_orders WHERE approval_id IS NOT NULL)"
    ):
        problems.append(f"{row['approval_id']} is executed but its work order is missing")
    for row in await app.db.fetch_all(
        "SELECT approval_id, COUNT(*) AS n FROM work_orders WHERE approval_id IS NOT NULL "
        "GROUP BY approval_id HAVING COUNT(*) > 1"
    ):
        problems.append(f"{row['approval_id']} created {row['n']} work orders")
    return problems


async def work_orders_of(app: AppContext, approval_id: str) -> int:
    row = await app.db.fetch_one("SELECT COUNT(*) AS n FROM work_orders WHERE approval_id = ?", (approval_id,))
    assert row is not None
    return int(row["n"])
