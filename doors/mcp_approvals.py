"""The HTTP door's approval endpoints: a supervisor, proven by a bearer token, lists, approves and rejects.

Approving is never a tool: these are plain HTTP endpoints beside ``/mcp``, behind the same token check
(`doors.mcp_auth.RequireBearer`), and they call the app's `ApprovalService` with the token's `CallContext`.

- ``GET /approvals?status=pending&limit=50&offset=0``: one page of approvals.
- ``POST /approvals/{id}/approve``: approve and execute a parked write.
- ``POST /approvals/{id}/reject`` with ``{"reason": "..."}``: reject it.

Each needs a proven principal with the supervisor role (403 otherwise, with ``WWW-Authenticate: Bearer
error="insufficient_scope"`` as RFC 6750 §3.1 says), and approving or rejecting needs a
principal other than the one who proposed the write (four eyes, 403, whatever ``Approval.AllowSelfApproval``
says). The role is checked first, before the id or the body is looked at. Every refusal (403, an unknown id's
404, a reject without a reason's 400) is audited as denied under door ``mcp-http``; decisions are audited by
the service.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from core.errors import PumpOpsError
from doors.mcp_auth import request_caller
from governance import ApprovalError
from governance.audit_log import AuditOutcome
from governance.errors import RoleError, SelfApprovalError
from governance.identity import CallContext
from governance.roles import Role
from kernel_setup.app import AppContext

_MAX_REASON = 2_000


def approval_routes(app: AppContext) -> list[Route]:
    """The approval endpoints for ``app``."""

    async def listing(request: Request) -> JSONResponse:
        who = request_caller(request)
        refused = await _refuse_unless_supervisor(app, who, "approvals-list", {})
        if refused is not None:
            return refused
        query = request.query_params
        try:
            limit = int(query.get("limit", "50"))
            offset = int(query.get("offset", "0"))
            page = await app.approvals.list(query.get("status", "pending"), limit=limit, offset=offset)
        except ValueError:
            return _problem(
                400, "limit and offset are whole numbers, e.g. /approvals?status=pending&limit=50&offset=0."
            )
        except ApprovalError as exc:
            return _problem(400, str(exc))
        return JSONResponse(page.model_dump(mode="json"))

    async def approve(request: Request) -> JSONResponse:
        who = request_caller(request)
        approval_id = request.path_params["approval_id"]
        arguments = {"approval_id": approval_id}
        refused = await _refuse_unless_supervisor(app, who, "approvals-approve", arguments)
        if refused is None:
            refused = await _refuse_unknown(app, who, "approvals-approve", arguments)
        if refused is not None:
            return refused
        try:
            decision = await app.approvals.approve(approval_id, who)
        except PumpOpsError as exc:
            return _refusal(exc)
        return JSONResponse(decision.model_dump(mode="json"))

    async def reject(request: Request) -> JSONResponse:
        who = request_caller(request)
        approval_id = request.path_params["approval_id"]
        arguments = {"approval_id": approval_id}
        refused = await _refuse_unless_supervisor(app, who, "approvals-reject", arguments)
        if refused is not None:
            return refused
        reason = await _reason(request)
        if reason is None:
            return await _denied(
                app,
                who,
                "approvals-reject",
                arguments,
                400,
                'Send the reason as JSON, e.g. {"reason": "duplicate of WO-0003"}.',
            )
        refused = await _refuse_unknown(app, who, "approvals-reject", arguments)
        if refused is not None:
            return refused
        try:
            approval = await app.approvals.reject(approval_id, who, reason)
        except PumpOpsError as exc:
            return _refusal(exc)
        return JSONResponse(approval.model_dump(mode="json"))

    return [
        Route("/approvals", endpoint=listing, methods=["GET"]),
        Route("/approvals/{approval_id}/approve", endpoint=approve, methods=["POST"]),
        Route("/approvals/{approval_id}/reject", endpoint=reject, methods=["POST"]),
    ]


async def _refuse_unless_supervisor(
    app: AppContext, who: CallContext, function: str, arguments: dict[str, Any]
) -> JSONResponse | None:
    if who.has(Role.SUPERVISOR):
        return None
    if not who.proof.proven:
        reason = (
            "Approvals over HTTP need a token; this server accepts unauthenticated loopback clients only for tools."
        )
    else:
        held = ", ".join(sorted(role.value for role in who.roles)) or "none"
        reason = f"{who.principal} holds the roles {held}; deciding or listing approvals needs the supervisor role."
    return _insufficient(await _denied(app, who, function, arguments, 403, reason))


async def _refuse_unknown(
    app: AppContext, who: CallContext, function: str, arguments: dict[str, Any]
) -> JSONResponse | None:
    """404 (audited) for an id that names no approval; the service decides everything else and audits it."""
    try:
        await app.approvals.get(arguments["approval_id"])
    except ApprovalError as exc:
        return await _denied(app, who, function, arguments, 404, str(exc))
    return None


async def _denied(
    app: AppContext, who: CallContext, function: str, arguments: dict[str, Any], status: int, message: str
) -> JSONResponse:
    """A refusal the endpoint decides itself, audited as denied under the caller before it is answered."""
    await app.audit.record(
        function=function, arguments=arguments, outcome=AuditOutcome.DENIED, call=who, detail=message
    )
    return _problem(status, message)


def _refusal(exc: PumpOpsError) -> JSONResponse:
    """A refused decision (already audited by the service): 403 for a missing role or four eyes, else 409."""
    if isinstance(exc, RoleError):
        return _insufficient(_problem(403, str(exc)))
    return _problem(403 if isinstance(exc, SelfApprovalError) else 409, str(exc))


def _insufficient(response: JSONResponse) -> JSONResponse:
    """A 403 for a missing role says so the RFC 6750 way: the token is valid but grants too little."""
    response.headers["WWW-Authenticate"] = f'Bearer error="insufficient_scope", scope="{Role.SUPERVISOR.value}"'
    return response


async def _reason(request: Request) -> str | None:
    try:
        body = json.loads(await request.body())
    except ValueError:
        return None
    reason = body.get("reason") if isinstance(body, dict) else None
    return reason.strip()[:_MAX_REASON] if isinstance(reason, str) and reason.strip() else None


def _problem(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
