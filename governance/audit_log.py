"""The hash-chained audit trail: one durable row per kernel invocation, verifiable end to end.

Each row stores the hash of the row before it (``prev_hash``) and its own hash (``row_hash``, a
SHA-256 over a canonical JSON of its columns and ``prev_hash``). Appends read the chain's head and
insert the next row inside one ``BEGIN IMMEDIATE`` transaction, so concurrent writers, in this
process or in others sharing the file, queue up instead of forking the chain; the table's
``UNIQUE (prev_hash)`` refuses a fork even from a writer that skipped that protocol.

The chain is tamper-evident, not tamper-proof: editing or deleting a row breaks it, but someone who
rewrites every row from the edit onwards, or drops the newest rows, leaves a valid chain. Record
the head hash `verify` reports somewhere else to detect those too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from core.errors import sentence
from governance.audit_values import capped, sanitize_arguments, utf8
from governance.effects import Effect
from governance.identity import CallContext, current_call
from storage import DRIVER_ERRORS, Connection, Database, Row, StorageError

GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first row."""

_VERIFY_BATCH = 1_000

# The columns the row hash covers, in a fixed order (the canonical JSON sorts keys anyway).
_HASHED_COLUMNS = (
    "id",
    "at",
    "principal",
    "session",
    "door",
    "function",
    "effect",
    "arguments",
    "outcome",
    "detail",
    "duration_ms",
    "result_digest",
    "prev_hash",
)


class AuditError(StorageError):
    """The audit trail could not be written or read."""


class AuditOutcome(str, Enum):
    """How an invocation ended; the same words as a turn result's tool-call ``status``."""

    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    PENDING_APPROVAL = "pending_approval"
    REJECTED = "rejected"


class AuditRow(BaseModel):
    """One stored audit row."""

    model_config = ConfigDict(frozen=True)

    id: int
    at: str
    principal: str
    session: str | None
    door: str
    function: str
    effect: Effect | None
    arguments: Any
    outcome: AuditOutcome
    detail: str | None
    duration_ms: float | None
    result_digest: str | None
    prev_hash: str
    row_hash: str

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> AuditRow:
        """Build a row from its stored columns; ``arguments`` is parsed from its JSON text when it parses."""
        values = {name: columns[name] for name in (*_HASHED_COLUMNS, "row_hash")}
        try:
            values["arguments"] = json.loads(values["arguments"])
        except (TypeError, json.JSONDecodeError):
            pass  # a tampered row: show the stored text as it is
        return cls.model_validate(values)


class ChainReport(BaseModel):
    """The result of checking the whole chain."""

    model_config = ConfigDict(frozen=True)

    rows_checked: int
    first_bad_id: int | None = None
    reason: str | None = None
    head_hash: str | None = None

    @property
    def ok(self) -> bool:
        """True when every row checked out."""
        return self.first_bad_id is None


class RejectionRecorder(Protocol):
    """Audits calls rejected before any kernel filter runs."""

    async def record_rejected(
        self, function_name: str, arguments: Mapping[str, Any], reason: str, context: CallContext | None = None
    ) -> object:
        """Record one rejected call."""


class AuditLog:
    """Append-only, hash-chained audit rows in the project database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._head: tuple[int, str] | None = None  # (id, row_hash) of the row this log appended last

    async def record(
        self,
        *,
        function: str,
        arguments: Mapping[str, Any],
        outcome: AuditOutcome,
        call: CallContext | None = None,
        effect: Effect | None = None,
        detail: str | None = None,
        duration_ms: float | None = None,
        result_text: str | None = None,
    ) -> AuditRow:
        """Append one row at the head of the chain and return it.

        Args:
            function: The function as the model sees it, e.g. ``assets-get_pump_details``.
            arguments: The call's arguments as received; they are sanitized before storing.
            outcome: How the call ended.
            call: Who asked; defaults to the context the door set (`current_call`).
            effect: Whether the function reads or writes, when known.
            detail: An error message, a rejection reason or an approval id; capped.
            duration_ms: How long the call took, or None when it never ran.
            result_text: The result as the caller received it; only its SHA-256 is stored.

        Raises:
            AuditError: the row could not be written (the chain is left as it was).
        """
        columns = _columns(function, arguments, outcome, call, effect, detail, duration_ms, result_text)
        try:
            async with self._db.transaction() as conn:
                await self.append(conn, columns)
        except DRIVER_ERRORS as exc:
            raise AuditError(f"Cannot append to the audit trail: {sentence(str(exc))}") from exc
        return AuditRow.from_columns(columns)

    async def record_in(
        self,
        conn: Connection,
        *,
        function: str,
        arguments: Mapping[str, Any],
        outcome: AuditOutcome,
        call: CallContext | None = None,
        effect: Effect | None = None,
        detail: str | None = None,
        duration_ms: float | None = None,
        result_text: str | None = None,
    ) -> AuditRow:
        """Append a row inside the caller's ``BEGIN IMMEDIATE`` transaction (a write and its row commit together)."""
        columns = _columns(function, arguments, outcome, call, effect, detail, duration_ms, result_text)
        await self.append(conn, columns)
        return AuditRow.from_columns(columns)

    async def append(self, conn: Connection, columns: dict[str, Any]) -> None:
        """Chain and insert prepared columns; the caller holds the write transaction."""
        columns["at"] = datetime.now(UTC).isoformat(timespec="milliseconds")
        # The head this log appended last, if it is still the head: one statement reads and extends the chain.
        # The check runs inside the write transaction (BEGIN IMMEDIATE, or PostgreSQL's write lock), so no
        # writer in any process can append between it and the insert; a head moved by anyone else (or a
        # rolled-back append) only makes the check fail, and the head is then read as below.
        if self._head is not None:
            _chain(columns, self._head)
            cursor = await conn.execute(_INSERT_AFTER_HEAD, (*_values(columns), self._head[1]))
            if cursor.rowcount == 1:
                self._head = (columns["id"], columns["row_hash"])
                return
        async with conn.execute("SELECT id, row_hash FROM audit_log ORDER BY id DESC LIMIT 1") as cursor:
            head = await cursor.fetchone()
        _chain(columns, None if head is None else (head["id"], head["row_hash"]))
        await conn.execute(_INSERT, _values(columns))
        self._head = (columns["id"], columns["row_hash"])

    async def record_rejected(
        self,
        function_name: str,
        arguments: Mapping[str, Any],
        reason: str,
        context: CallContext | None = None,
    ) -> None:
        """Record a call refused before any filter ran (unknown tool, invalid arguments).

        The turn runner and the MCP dispatcher call this for the rejections Semantic Kernel or MCP
        make themselves, so the trail has no gaps. ``context`` defaults to the one the door set.

        Raises:
            AuditError: the row could not be written.
        """
        await self.record(
            function=function_name,
            arguments=arguments,
            outcome=AuditOutcome.REJECTED,
            call=context,
            detail=reason,
        )

    async def tail(self, n: int = 20) -> list[AuditRow]:
        """The newest ``n`` rows, oldest first."""
        if n < 1:
            return []
        rows = await self._db.fetch_all("SELECT * FROM audit_log ORDER BY id DESC LIMIT ?", (n,))
        return [AuditRow.from_columns(_as_dict(row)) for row in reversed(rows)]

    async def verify(self) -> int | None:
        """Check the whole chain; return the id of the first bad row, or None when it is intact."""
        return (await self.check_chain()).first_bad_id

    async def check_chain(self) -> ChainReport:
        """Walk the chain from the first row, recomputing each hash and checking each link.

        A row is bad when its stored hash does not match its columns (it was edited) or when its
        ``prev_hash`` is not the hash of the row before it (rows before it were deleted, inserted or
        edited along with their hashes).
        """
        checked = 0
        prev_id: int | None = None
        prev_hash = GENESIS_HASH
        while True:
            rows = await self._db.fetch_all(
                "SELECT * FROM audit_log WHERE id > ? ORDER BY id LIMIT ?",
                (0 if prev_id is None else prev_id, _VERIFY_BATCH),
            )
            if not rows:
                return ChainReport(rows_checked=checked, head_hash=None if prev_id is None else prev_hash)
            for raw in rows:
                columns = _as_dict(raw)
                row_id = int(columns["id"])
                problem = _row_problem(columns, prev_id, prev_hash)
                if problem is not None:
                    return ChainReport(rows_checked=checked, first_bad_id=row_id, reason=problem)
                checked += 1
                prev_id, prev_hash = row_id, str(columns["row_hash"])


_STORED_COLUMNS = (*_HASHED_COLUMNS, "row_hash")
_INSERT = f"INSERT INTO audit_log ({', '.join(_STORED_COLUMNS)}) VALUES ({', '.join('?' * len(_STORED_COLUMNS))})"
_INSERT_AFTER_HEAD = (
    f"INSERT INTO audit_log ({', '.join(_STORED_COLUMNS)}) SELECT {', '.join('?' * len(_STORED_COLUMNS))} "
    "WHERE (SELECT row_hash FROM audit_log ORDER BY id DESC LIMIT 1) = ?"
)


def _chain(columns: dict[str, Any], head: tuple[int, str] | None) -> None:
    """Link prepared columns after ``head`` (id, row_hash), or as the first row, and hash them."""
    columns["id"] = 1 if head is None else head[0] + 1
    columns["prev_hash"] = GENESIS_HASH if head is None else head[1]
    columns["row_hash"] = row_hash(columns)


def _values(columns: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(columns[name] for name in _STORED_COLUMNS)


def _columns(
    function: str,
    arguments: Mapping[str, Any],
    outcome: AuditOutcome,
    call: CallContext | None,
    effect: Effect | None,
    detail: str | None,
    duration_ms: float | None,
    result_text: str | None,
) -> dict[str, Any]:
    who = call if call is not None else current_call()
    columns: dict[str, Any] = {
        "principal": utf8(who.audit_name),  # an asserted label shows beside the principal, marked as asserted
        "session": None if who.session is None else utf8(who.session),
        "door": utf8(who.door),
        "function": utf8(function),
        "effect": None if effect is None else effect.value,
        "arguments": sanitize_arguments(arguments),
        "outcome": outcome.value,
        "detail": None if detail is None else capped(detail),
        "duration_ms": None if duration_ms is None else round(float(duration_ms), 3),
        "result_digest": None
        if result_text is None
        else hashlib.sha256(result_text.encode("utf-8", "surrogatepass")).hexdigest(),
    }
    return columns


def row_hash(columns: Mapping[str, Any]) -> str:
    """SHA-256 over the canonical JSON (sorted keys, no spaces) of the hashed columns, ``prev_hash`` included."""
    payload = {name: columns[name] for name in _HASHED_COLUMNS}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _row_problem(columns: Mapping[str, Any], prev_id: int | None, prev_hash: str) -> str | None:
    row_id = columns["id"]
    try:
        expected = row_hash(columns)
    except (TypeError, ValueError):
        return f"row {row_id} holds a value that cannot be hashed (a column was edited)"
    if expected != columns["row_hash"]:
        return f"row {row_id}'s contents do not match its row_hash (a column was edited)"
    if columns["prev_hash"] != prev_hash:
        before = "the start of the chain" if prev_id is None else f"row {prev_id}"
        return (
            f"row {row_id}'s prev_hash does not match the hash of {before} "
            "(rows were deleted or inserted before it, or an earlier row was rewritten)"
        )
    return None


def _as_dict(row: Row) -> dict[str, Any]:
    return dict(zip(row.keys(), row, strict=True))
