"""What every fuzz and injection test checks: recovery messages, nothing written, every call audited."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal

from kernel_setup import AppContext, Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
_LEAKS = re.compile(r"Traceback|File \"|site-packages|\.py\b|/tmp/|/work/|/home/|/usr/")


def fuzz_settings(tmp_path: Path) -> Settings:
    path = tmp_path / "appsettings.json"
    # The fuzzer parks every valid write it invents: lift Approval.MaxPendingPerPrincipal so all reach the gate.
    path.write_text(
        json.dumps(
            {
                "Database": {"Path": "fuzz.db"},
                "Qdrant": {"Path": ":memory:"},
                "Approval": {"MaxPendingPerPrincipal": 100_000},
            }
        )
    )
    return load_settings(path, env={})


def leak_in(message: str, tmp_path: Path, echo: object = None) -> str | None:
    """What in ``message`` a model or client must never see (a traceback, a file path), or None.

    Text that only repeats the caller's own input (``echo``) back is not a leak.
    """
    echoed = f"{echo!r:.100000} {echo!s:.100000}" if echo is not None else ""
    for found in _LEAKS.finditer(message):
        if found.group(0) not in echoed:
            return found.group(0)
    if str(tmp_path) in message or str(REPO) in message:
        return "a local path"
    return None


@dataclass
class WriteState:
    """The records a write would change, to compare before and after."""

    work_orders: int
    acknowledged: list[tuple[str, str | None]]
    idempotency: int
    statuses: dict[str, int] = field(default_factory=dict)


async def write_state(app: AppContext) -> WriteState:
    def n(rows: list[Any]) -> int:
        return int(rows[0][0])

    return WriteState(
        work_orders=n(await app.db.fetch_all("SELECT COUNT(*) FROM work_orders")),
        acknowledged=[
            (r["alarm_id"], r["acknowledged_at"])
            for r in await app.db.fetch_all("SELECT alarm_id, acknowledged_at FROM alarms ORDER BY alarm_id")
        ],
        idempotency=n(await app.db.fetch_all("SELECT COUNT(*) FROM idempotency")),
        statuses={
            r["status"]: int(r["n"])
            for r in await app.db.fetch_all("SELECT status, COUNT(*) AS n FROM approvals GROUP BY status")
        },
    )


async def audit_count(app: AppContext) -> int:
    row = await app.db.fetch_one("SELECT COUNT(*) AS n FROM audit_log")
    assert row is not None
    return int(row["n"])


@contextmanager
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a worker thread: hypothesis drives examples synchronously, the app lives in the loop."""
    with start_blocking_portal(backend="asyncio") as blocking:
        yield blocking
