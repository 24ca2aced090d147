"""The registry state writes assume, checked by one function at proposal and at execution.

At proposal the check reads (`storage.Database.fetch_one`); at execution it reads inside the write's transaction
(`in_transaction`), so the state a supervisor approved is the state the write requires when it writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from governance import Precondition, PreconditionError
from storage import Connection, Row
from twin.errors import NotFoundError

Fetch = Callable[[str, Sequence[Any]], Awaitable[Row | None]]
"""Run a parameterized SELECT and return its first row: `storage.Database.fetch_one`, or `in_transaction(conn)`."""

IN_SERVICE = "is in the asset registry and not decommissioned"


def in_transaction(conn: Connection) -> Fetch:
    """A `Fetch` reading inside the write's own transaction (what it sees is what it writes against)."""

    async def fetch(sql: str, params: Sequence[Any]) -> Row | None:
        async with conn.execute(sql, params) as cursor:
            row: Row | None = await cursor.fetchone()
        return row

    return fetch


def pump_in_service(pump_id: str) -> Precondition:
    """The precondition that ``pump_id`` (canonical) exists and is not decommissioned."""
    return Precondition(subject=pump_id, expects=IN_SERVICE)


async def require_pump_in_service(fetch: Fetch, pump_id: str) -> None:
    """Refuse a write to a pump that is unknown or decommissioned.

    Raises:
        NotFoundError: no pump has that id.
        PreconditionError: the pump was decommissioned (the message says when).
    """
    row = await fetch("SELECT decommissioned_at FROM pumps WHERE pump_id = ?", (pump_id,))
    if row is None:
        raise NotFoundError.pump(pump_id)
    if row["decommissioned_at"] is not None:
        raise PreconditionError(
            f"{pump_id} was decommissioned at {row['decommissioned_at']}; nothing can be written for it. "
            "Tell the operator; call assets-list_pumps for the pumps in service."
        )
