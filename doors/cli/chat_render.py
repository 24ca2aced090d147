"""How the chat and triage show a turn: streamed answer, one line per tool call, flags, listings.

Everything here only prints; nothing decides. Output goes through rich consoles so a test can
capture it with ``Console(file=StringIO(), color_system=None)`` and compare text. Every value that
came from data, the model or the user goes through `safe_text` (markup escaped, hidden characters
shown as escapes) and is printed with markup on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from semantic_kernel.contents import AuthorRole
from semantic_kernel.contents.chat_message_content import ChatMessageContent
from semantic_kernel.contents.function_call_content import FunctionCallContent
from semantic_kernel.contents.function_result_content import FunctionResultContent

from doors.cli.safe_text import safe_text
from turn.events import (
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
    TurnEvent,
    TurnFinished,
    TurnResult,
)

MARKS = {
    "ok": ("✓", "green"),
    "error": ("✗ error", "red"),
    "denied": ("⛔ denied", "red"),
    "pending_approval": ("⏸ pending approval", "yellow"),
    "rejected": ("✗ rejected", "red"),
}
ARGUMENT_CHARS = 80
HISTORY_TEXT_CHARS = 200


class TurnRenderer:
    """Prints a turn's events as they arrive: tool calls as single lines, the answer as it streams.

    ``out`` receives the answer; ``notes`` the tool lines, flags and footer (the same console in
    the chat; stdout and stderr for `pumpops triage`).
    """

    def __init__(self, out: Console, notes: Console | None = None, *, answer_prefix: str = "") -> None:
        self._out = out
        self._notes = notes or out
        self._answer_prefix = answer_prefix
        self._streaming = False

    def render(self, event: TurnEvent) -> None:
        """Show one event."""
        if isinstance(event, ToolCallStarted):
            self.end_text()
            self._notes.print(f"[dim]… {safe_text(call_signature(event.name, event.arguments))}[/]", highlight=False)
        elif isinstance(event, ToolCallFinished):
            self.end_text()
            self._notes.print(tool_line(event.record), highlight=False)
        elif isinstance(event, TextDelta):
            if not self._streaming:
                self._streaming = True
                if self._answer_prefix:
                    self._out.print(self._answer_prefix, end="", highlight=False)
            self._out.print(safe_text(event.text, multiline=True), end="", highlight=False, soft_wrap=True)
        elif isinstance(event, TurnFinished):
            self.end_text()
            self.finish(event.result)

    def cancelled(self) -> None:
        """Say that the running turn was cancelled (Ctrl-C)."""
        if not self._streaming and self._notes.is_terminal:
            self._notes.print()  # after the terminal's echoed ^C
        self.end_text()
        self._notes.print("[yellow]⏹ turn cancelled[/] (nothing was saved to the session)", highlight=False)

    def finish(self, result: TurnResult) -> None:
        """Flags and the footer after the answer: degraded, unverified numbers or ids, alarms misread, usage."""
        for line in [*turn_flags(result), usage_line(result)]:
            self._notes.print(line, highlight=False)

    def end_text(self) -> None:
        """End a streamed line of answer text, if one is open."""
        if self._streaming:
            self._out.print()
            self._streaming = False


def turn_flags(result: TurnResult) -> list[str]:
    """The notes under an answer, as rich markup: degraded, unverified numbers or ids, alarms misread, corrections."""
    flags: list[str] = []
    if result.degraded:
        flags.append(f"[bold yellow]⚠ degraded:[/] {safe_text(result.reason or 'unknown')}")
        if not result.answer.strip():
            flags.append("[bold yellow]⚠ no answer within the turn's bounds[/]")
    for label, found in result.doubts():
        flags.append(f"[bold yellow]⚠ {safe_text(label)}:[/] {safe_text('; '.join(found))}")
    flags += [f"[bold cyan]✎ {safe_text(line)}[/]" for line in correction_notes(result)]
    return flags


_CORRECTED = {
    "retried": "answer corrected: the first answer failed a check and the model answered again",
    "replaced": "answer replaced: it failed its checks twice; shown instead is what the tool results say",
    "refused": "question refused: it is outside this plant's pumps, alarms and manuals",
    # Agent.StructuredAnswers (`turn.structured`); a structured answer written as asked needs no note.
    "dropped": "structured answer: left out of the model's reply",
    "kept_text": "structured answer: the model's reply could not be used, so its own answer is shown",
}


def correction_notes(result: TurnResult) -> list[str]:
    """One plain note per thing the turn's checks did to the answer (none when it was shown as written)."""
    notes = []
    for action, text in _CORRECTED.items():
        found = [c.finding for c in result.corrections if c.action == action]
        if found:
            notes.append(f"{text} ({'; '.join(found)})" if action != "refused" else text)
    return notes


def usage_line(result: TurnResult) -> str:
    """The footer's last line, as rich markup: the session, model calls and tokens."""
    usage = result.usage
    return (
        f"[dim]session {safe_text(result.session)} · {usage.model_calls} model calls · "
        f"{usage.prompt_tokens}+{usage.completion_tokens} tokens{' (estimated)' if usage.estimated else ''}[/]"
    )


def call_signature(name: str, arguments: Mapping[str, Any]) -> str:
    """``name(key=value, ...)`` with values as compact JSON, cut to a readable length."""
    parts = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())
    if len(parts) > ARGUMENT_CHARS:
        parts = parts[: ARGUMENT_CHARS - 1] + "…"
    return f"{name}({parts})"


def tool_line(record: ToolCallRecord) -> str:
    """One finished tool call as rich markup: mark, call, summary, duration."""
    mark, colour = MARKS.get(record.status, (record.status, "red"))
    line = (
        f"[{colour}]{mark}[/] {safe_text(call_signature(record.name, record.arguments))} "
        f"→ {safe_text(record.summary)} [dim]({record.duration_ms:.0f} ms)[/]"
    )
    if record.status == "pending_approval":
        line += "\n  [yellow]parked for a human: /approvals lists it[/]"
    return line


def print_tools(console: Console, definitions: Sequence[Mapping[str, Any]]) -> None:
    """The functions the model may call, with their parameters (``?`` marks optional ones)."""
    console.print(f"[bold]{len(definitions)} tools[/]", highlight=False)
    for definition in definitions:
        function = definition["function"]
        parameters = function.get("parameters", {})
        required = set(parameters.get("required", []))
        signature = ", ".join(f"{n}{'' if n in required else '?'}" for n in parameters.get("properties", {}))
        first = str(function.get("description", "")).split(". ")[0].rstrip(".")
        console.print(f"  [cyan]{safe_text(function['name'])}[/]({safe_text(signature)}) [dim]{safe_text(first)}[/]")


def print_approvals(console: Console, page: Any, *, status: str | None) -> None:
    """One page of parked actions, one block each (id, function, arguments, who asked, when it expires), then the count.

    ``page`` is an `ApprovalPage`: its ``approvals``, ``total`` and ``describe()``.
    """
    kind = f"{status} " if status else ""
    if not page.total:
        console.print(f"no {safe_text(kind)}approvals", highlight=False)
        return
    for approval in page.approvals:
        console.print(
            f"[bold]{safe_text(approval.id)}[/] "
            f"[{_status_colour(approval.status)}]{safe_text(_text(approval.status))}[/] "
            f"{safe_text(call_signature(str(approval.function), approval.arguments or {}))}",
            highlight=False,
        )
        details = f"requested by {approval.requested_by} at {_text(approval.requested_at)}"
        details += f" · expires {_text(approval.expires_at)}"
        if approval.decided_by:
            details += f" · decided by {approval.decided_by}"
        console.print(f"  [dim]{safe_text(details)}[/]", highlight=False)
    following = getattr(page, "next_offset", None)
    more = (
        ""
        if following is None
        else f"; more with: pumpops approvals list --status {status or 'all'} --offset {following}"
    )
    console.print(f"[dim]{safe_text(page.describe())} {safe_text(kind)}approvals{more}[/]", highlight=False)


def print_decision(console: Console, approval: Any) -> None:
    """The approval after a decision: whether this call ran it (or it had run already), and the action's result."""
    message = getattr(approval, "message", None)
    if message:
        console.print(safe_text(message), highlight=False)
    console.print(
        f"[{_status_colour(approval.status)}]{safe_text(_text(approval.status))}[/] {safe_text(approval.id)} "
        f"{safe_text(call_signature(str(approval.function), approval.arguments or {}))} "
        f"[dim](by {safe_text(approval.decided_by)})[/]",
        highlight=False,
    )
    if approval.result is not None:
        result = approval.result if isinstance(approval.result, str) else json.dumps(approval.result, default=str)
        console.print(f"  result: {safe_text(_cut(result, HISTORY_TEXT_CHARS))}", highlight=False)


def print_history(console: Console, session: str, messages: Sequence[ChatMessageContent]) -> None:
    """A session's stored messages: questions, tool calls, result sizes and answers."""
    if not messages:
        console.print(f"session {safe_text(session)} has no messages yet", highlight=False)
        return
    console.print(f"[bold]session {safe_text(session)}[/] · {len(messages)} messages", highlight=False)
    for message in messages:
        if message.role == AuthorRole.USER:
            console.print(
                f"[bold]you>[/] {safe_text(_cut(message.content or '', HISTORY_TEXT_CHARS))}", highlight=False
            )
        elif message.role == AuthorRole.TOOL:
            for item in message.items:
                if isinstance(item, FunctionResultContent):
                    size = len(str(item.result))
                    console.print(f"  [dim]← {safe_text(item.name or '')}: {size} characters[/]", highlight=False)
        else:
            for item in message.items:
                if isinstance(item, FunctionCallContent):
                    arguments = item.arguments if isinstance(item.arguments, dict) else {}
                    console.print(
                        f"  [dim]→ {safe_text(call_signature(item.name or '', arguments))}[/]", highlight=False
                    )
            if message.content:
                console.print(f"pumpops> {safe_text(_cut(message.content, HISTORY_TEXT_CHARS))}", highlight=False)


def _text(value: Any) -> str:
    value = getattr(value, "value", value)  # enums by value
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def _status_colour(status: Any) -> str:
    return {"pending": "yellow", "approved": "green", "executed": "green"}.get(_text(status), "red")


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
