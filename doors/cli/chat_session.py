"""One interactive chat: questions become turns, slash commands inspect tools, history and approvals.

`ChatSession` is the async half of `pumpops chat`; the prompt loop in `chat_cmd` feeds it one line
at a time. A turn runs as its own task, cancelled by Ctrl-C (SIGINT) without ending the session.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Protocol, cast

from rich.console import Console

from core.errors import PumpOpsError
from doors.cli.chat_render import TurnRenderer, print_approvals, print_decision, print_history, print_tools
from doors.cli.safe_text import safe_text
from governance.identity import CallContext
from kernel_setup.app import AppContext
from kernel_setup.direct_calls import tool_definitions
from turn.factory import runner_for
from turn.runner import TurnRunner
from turn.sessions import MAX_SESSION_ID_LENGTH, SessionStore, new_session_id

APPROVAL_STATUSES = ("pending", "approved", "executed", "rejected", "expired", "refused")
HELP = """\
[bold]Ask anything about the pumps in plain language.[/] Commands:
  /tools                  the functions the model may call
  /approvals [STATUS|all] parked actions (default: pending)
  /approve ID             approve a parked action (runs it once)
  /reject ID REASON       reject a parked action
  /history                this session's messages
  /reset                  start a new session (the old one stays; continue it with --session)
  /help                   this list
  /quit                   leave (also Ctrl-D; Ctrl-C cancels a running turn)"""


class ApprovalsService(Protocol):
    """What the chat needs from the approvals service (`app.approvals`)."""

    async def list(self, status: str | None = None) -> Any:
        """One page of approvals (an `ApprovalPage`), optionally with one status."""
        ...

    async def get(self, approval_id: str) -> Any:
        """One approval; raises a `PumpOpsError` for an unknown id."""
        ...

    async def approve(self, approval_id: str, who: CallContext) -> Any:
        """Approve and run a parked action as ``who``; raises a `PumpOpsError` when refused."""
        ...

    async def reject(self, approval_id: str, who: CallContext, reason: str) -> Any:
        """Reject a parked action as ``who``; raises a `PumpOpsError` when refused."""
        ...


class ChatSession:
    """The state of one chat: the app, who is asking, the current session id."""

    def __init__(
        self,
        app: AppContext,
        console: Console,
        *,
        principal: CallContext,
        session: str | None = None,
        model: str = "",
    ) -> None:
        """Start a chat as ``principal``, the door's caller (`kernel_setup.local_identity.local_caller`).

        Its turns, /approve and /reject act as it: deciding needs its principal's supervisor role.
        """
        if session is not None and not 0 < len(session) <= MAX_SESSION_ID_LENGTH:
            raise PumpOpsError(f"A session id has 1 to {MAX_SESSION_ID_LENGTH} characters; got {len(session)}.")
        self.console = console
        self.session = session or new_session_id()
        self.turns = 0
        self._app = app
        self._caller = principal
        self._continued = session is not None
        ollama = app.settings.ollama
        self._model = model or f"{ollama.model_id} at {ollama.host}"
        self._runner: TurnRunner = runner_for(app)

    async def start(self) -> None:
        """Greet: model and host, the database, the session, who is asking, how to get help."""
        self.console.print(f"[bold]PumpOps chat[/] · model [cyan]{safe_text(self._model)}[/]", highlight=False)
        self.console.print(f"[dim]database {safe_text(self._app.db.description)}[/]", highlight=False)
        stored = len(await SessionStore(self._app.db).load(self.session)) if self._continued else 0
        state = f"continuing, {stored} messages" if stored else "new"
        self.console.print(
            f"[dim]session {safe_text(self.session)} ({state}) · as {safe_text(self._caller.audit_name)} · "
            "/help for commands · Ctrl-C cancels a turn · /quit or Ctrl-D exits[/]",
            highlight=False,
        )

    async def handle(self, line: str) -> bool:
        """Act on one input line; False when the chat should end."""
        text = line.strip()
        if not text:
            return True
        if text.startswith("/"):
            return await self._command(text)
        await self.ask(text)
        return True

    async def ask(self, question: str) -> None:
        """Run one turn, rendering its events; Ctrl-C cancels it and the chat goes on."""
        renderer = TurnRenderer(self.console, answer_prefix="pumpops> ")

        async def turn() -> None:
            async for event in self._runner.stream(question, session=self.session, principal=self._caller):
                renderer.render(event)

        task = asyncio.create_task(turn())
        with _cancel_on_sigint(task):
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # the chat itself is being cancelled, not just the turn
                renderer.cancelled()
                return
            except PumpOpsError as exc:  # the model failed mid-session: say so and keep the session
                renderer.end_text()
                self.console.print(f"[bold red]error:[/] {safe_text(str(exc))}", highlight=False)
                return
        self.turns += 1

    async def _command(self, text: str) -> bool:
        name, _, rest = text.partition(" ")
        rest = rest.strip()
        name = name.lower()
        if name in {"/quit", "/exit"}:
            return False
        if name == "/help":
            self.console.print(HELP, highlight=False)
        elif name == "/tools":
            print_tools(self.console, tool_definitions(self._app.kernel))
        elif name == "/history":
            print_history(self.console, self.session, await SessionStore(self._app.db).load(self.session))
        elif name == "/reset":
            previous, self.session = self.session, new_session_id()
            self.console.print(
                f"new session {safe_text(self.session)} (continue the previous one with: "
                f"pumpops chat --session {safe_text(previous)})",
                highlight=False,
            )
        elif name == "/approvals":
            await self._list_approvals(rest)
        elif name == "/approve":
            await self._approve(rest)
        elif name == "/reject":
            await self._reject(rest)
        else:
            self.console.print(f"unknown command {safe_text(name)}; /help lists the commands", highlight=False)
        return True

    def _approvals(self) -> ApprovalsService | None:
        service = getattr(self._app, "approvals", None)
        if service is None:
            self.console.print(
                "[yellow]approvals are not available:[/] this PumpOps has no approvals service", highlight=False
            )
            return None
        return cast(ApprovalsService, service)

    async def _list_approvals(self, rest: str) -> None:
        wanted = rest.lower() or "pending"
        if wanted != "all" and wanted not in APPROVAL_STATUSES:
            self.console.print(f"usage: /approvals [{'|'.join(APPROVAL_STATUSES)}|all]", highlight=False)
            return
        if (service := self._approvals()) is None:
            return
        status = None if wanted == "all" else wanted
        print_approvals(self.console, await service.list(status), status=status)

    async def _approve(self, rest: str) -> None:
        approval_id = rest.split(maxsplit=1)[0] if rest else ""
        if not approval_id:
            self.console.print("usage: /approve ID", highlight=False)
            return
        if (service := self._approvals()) is None:
            return
        try:
            approval = await service.approve(approval_id, self._deciding())
        except PumpOpsError as exc:
            await self._refused(service, approval_id, exc)
            return
        print_decision(self.console, approval)

    async def _reject(self, rest: str) -> None:
        approval_id, _, reason = rest.partition(" ")
        if not approval_id or not reason.strip():
            self.console.print("usage: /reject ID REASON", highlight=False)
            return
        if (service := self._approvals()) is None:
            return
        try:
            approval = await service.reject(approval_id, self._deciding(), reason=reason.strip())
        except PumpOpsError as exc:
            await self._refused(service, approval_id, exc)
            return
        print_decision(self.console, approval)

    def _deciding(self) -> CallContext:
        """The chat's caller deciding an approval, tied to this session in the audit trail."""
        return replace(self._caller, session=self.session)

    async def _refused(self, service: ApprovalsService, approval_id: str, exc: PumpOpsError) -> None:
        """Say why, and when the action is still pending, how a supervisor decides it."""
        message = str(exc)
        self.console.print(f"[bold red]refused:[/] {safe_text(message)}", highlight=False)
        if "pumpops approvals approve" in message:
            return  # the service already said how
        try:
            pending = _text(getattr(await service.get(approval_id), "status", "")) == "pending"
        except PumpOpsError:
            return  # an unknown id: the refusal said so
        if pending:
            self.console.print(
                f"A supervisor other than the requester approves it with: pumpops approvals approve "
                f"{safe_text(approval_id)}",
                highlight=False,
            )


def _text(value: Any) -> str:
    return str(getattr(value, "value", value))


@contextmanager
def _cancel_on_sigint(task: asyncio.Task[Any]) -> Iterator[None]:
    """While inside, Ctrl-C cancels ``task`` instead of raising KeyboardInterrupt.

    Where the loop cannot own SIGINT (Windows, a non-main thread) asyncio.Runner's own handler
    cancels the whole step and the prompt loop reports it.
    """
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):
        installed = False
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
