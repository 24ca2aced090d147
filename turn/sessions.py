"""Chat sessions persisted in SQLite, so `--session ID` continues a conversation in another process."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from semantic_kernel.contents import AuthorRole
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent

from storage import Database
from turn.tokens import estimate_tokens

MAX_SESSION_ID_LENGTH = 64


def new_session_id() -> str:
    """A fresh session id."""
    return uuid.uuid4().hex[:12]


class SessionStore:
    """Messages of each session, in order."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, session_id: str) -> list[ChatMessageContent]:
        """Every stored message of a session (none for a new session)."""
        rows = await self._db.fetch_all(
            "SELECT message FROM session_messages WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return [ChatMessageContent.model_validate_json(row["message"]) for row in rows]

    async def exists(self, session_id: str) -> bool:
        """Whether a session has been stored."""
        return await self._db.fetch_one("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)) is not None

    async def append(self, session_id: str, principal: str, messages: Sequence[ChatMessageContent]) -> None:
        """Add messages to a session, creating it if needed, in one transaction."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO sessions (session_id, principal, created_at, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET updated_at = excluded.updated_at",
                (session_id, principal, now, now),
            )
            async with conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM session_messages WHERE session_id = ?", (session_id,)
            ) as cursor:
                row = await cursor.fetchone()
            seq = row[0] if row else 0
            await conn.executemany(
                "INSERT INTO session_messages (session_id, seq, role, message) VALUES (?, ?, ?, ?)",
                [
                    (session_id, seq + offset, str(message.role.value), message.model_dump_json())
                    for offset, message in enumerate(messages, start=1)
                ],
            )

    async def clear(self, session_id: str) -> None:
        """Forget a session's messages."""
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
            await conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))


def trim_history(messages: Sequence[ChatMessageContent], token_limit: int) -> list[ChatMessageContent]:
    """Keep the newest messages within ``token_limit``, never separating a tool call from its results.

    Messages are grouped into units (an assistant message with tool calls plus the tool messages
    that follow it form one unit); whole units are dropped from the oldest end.
    """
    units: list[list[ChatMessageContent]] = []
    for message in messages:
        if message.role == AuthorRole.TOOL and units:
            units[-1].append(message)
        else:
            units.append([message])
    kept: list[list[ChatMessageContent]] = []
    used = 0
    for unit in reversed(units):
        cost = sum(_message_tokens(m) for m in unit)
        if used + cost > token_limit and kept:
            break
        kept.append(unit)
        used += cost
    # Never start the window on a dangling tool result.
    flat = [m for unit in reversed(kept) for m in unit]
    while flat and flat[0].role == AuthorRole.TOOL:
        flat.pop(0)
    return flat


def _message_tokens(message: ChatMessageContent) -> int:
    text = message.content or ""
    for item in message.items:
        if isinstance(item, FunctionCallContent):
            text += str(item.arguments or "") + (item.name or "")
        elif hasattr(item, "result"):
            text += str(item.result)
    return estimate_tokens(text) + 4
