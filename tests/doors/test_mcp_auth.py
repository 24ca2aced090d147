"""The HTTP MCP door proves who calls: bearer tokens (static and OAuth JWT), the metadata pointer, audited refusals.

Real servers on 127.0.0.1 only: the PumpOps door under uvicorn, and a JWKS endpoint the test starts and signs
for with its own RSA key. The official MCP client and httpx talk to them.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from doors.mcp_auth import token_roles
from doors.mcp_server import http_server
from governance.api_tokens import TokenFile
from governance.errors import SelfApprovalError
from governance.roles import Role
from kernel_setup import AppContext, load_settings, open_app
from kernel_setup.identity_settings import IdentitySettings
from kernel_setup.local_identity import local_caller, os_user
from tests.cli_process import run_pumpops
from tests.postgres_server import database_section

RESOURCE = "https://pumps.example.com/mcp"
"""The resource URI the door is configured with (as behind a TLS proxy): every JWT's audience must be it."""
METADATA = "https://pumps.example.com/.well-known/oauth-protected-resource/mcp"
"""Where the 401's header points: the well-known path inserted before the resource's path (RFC 9728 §3.1)."""
CLIENT = types.Implementation(name="ops-console", version="1.0")
ORDER = {"pump_id": "PUMP-007", "priority": "high", "summary": "Grease the bearings"}
WAIT = 30  # seconds: an upper bound on any exchange, never a synchronisation sleep
KID = "test-key-1"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@asynccontextmanager
async def on_loopback(asgi: ASGIApp) -> AsyncIterator[str]:
    """``asgi`` served by uvicorn on 127.0.0.1 and an ephemeral port; yields ``http://127.0.0.1:PORT``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # connections queue until uvicorn accepts them: no start-up race
        server = uvicorn.Server(uvicorn.Config(asgi, log_level="warning", lifespan="on"))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: server.serve(sockets=[listener]))
            with anyio.fail_after(WAIT):
                yield f"http://127.0.0.1:{listener.getsockname()[1]}"
            server.should_exit = True
    finally:
        listener.close()


@dataclass
class Door:
    """A running HTTP door with a local OAuth issuer (its JWKS served on loopback) and a tokens file."""

    app: AppContext
    url: str
    issuer: str
    key: rsa.RSAPrivateKey
    tokens: TokenFile

    def jwt(self, sub: str = "alice", *, roles: Any = ("operator",), **overrides: Any) -> str:
        """A JWT access token for ``sub``, signed with the issuer's key unless ``key`` is given."""
        key = overrides.pop("key", self.key)
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": sub, "aud": RESOURCE, "iat": now, "exp": now + 300, "roles": list(roles)}
        claims.update(overrides)
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})

    def static(self, name: str, *roles: Role) -> str:
        return self.tokens.create(name, roles)[1]

    @asynccontextmanager
    async def client(self, token: str | None, name: str = CLIENT.name) -> AsyncIterator[ClientSession]:
        """An initialized MCP session over streamable HTTP named ``name`` that sends ``token`` (if any) every time."""
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        info = types.Implementation(name=name, version="1.0")
        async with (
            httpx.AsyncClient(headers=headers, timeout=WAIT) as http,
            streamable_http_client(f"{self.url}/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write, client_info=info) as session,
        ):
            await session.initialize()
            yield session

    async def post(self, path: str, token: str | None, body: Any = None) -> httpx.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(timeout=WAIT) as http:
            return await http.post(f"{self.url}{path}", json=body if body is not None else {}, headers=headers)

    async def get(self, path: str, token: str | None = None) -> httpx.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(timeout=WAIT) as http:
            return await http.get(f"{self.url}{path}", headers=headers)


@asynccontextmanager
async def http_door(tmp_path: Path, database: str | Path, *, auth: bool = True, **sections: Any) -> AsyncIterator[Door]:
    """A door on ``database`` (the `database_target` fixture) whose ``Mcp.Auth`` names the local issuer (``auth``;
    else nothing is configured) plus ``sections``."""
    key = rsa_key()
    public = {**jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": KID, "use": "sig"}

    async def jwks(_: Request) -> JSONResponse:
        return JSONResponse({"keys": [public]})

    async with on_loopback(Starlette(routes=[Route("/.well-known/jwks.json", jwks)])) as issuer:
        settings_path = tmp_path / "appsettings.json"
        mcp_auth = {"Issuer": issuer, "ResourceUri": RESOURCE} if auth else {}
        document = {
            "Database": database_section(database),
            "Qdrant": {"Path": ":memory:"},
            "Mcp": {"Auth": {**mcp_auth, "TokensFile": "tokens.json"}},
            **sections,
        }
        settings_path.write_text(json.dumps(document))
        async with open_app(load_settings(settings_path, env={})) as app:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                listener.bind(("127.0.0.1", 0))
                listener.listen()
                port = listener.getsockname()[1]
                server = http_server(app, "127.0.0.1", port)
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(lambda: server.serve(sockets=[listener]))
                    with anyio.fail_after(WAIT):
                        yield Door(app, f"http://127.0.0.1:{port}", issuer, key, TokenFile(tmp_path / "tokens.json"))
                    server.should_exit = True
            finally:
                listener.close()


async def denied_rows(app: AppContext) -> list[Any]:
    return [row for row in await app.audit.tail(200) if row.function == "mcp-authenticate"]


async def test_a_request_without_a_token_gets_401_pointing_at_the_published_resource_metadata(
    tmp_path: Path, database_target: str | Path
) -> None:
    async with http_door(tmp_path, database_target) as door:
        refused = await door.post("/mcp", None, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        metadata = await door.get("/.well-known/oauth-protected-resource")
        suffixed = await door.get("/.well-known/oauth-protected-resource/mcp")
        rows = await denied_rows(door.app)

    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{METADATA}"'
    assert metadata.status_code == 200 and suffixed.json() == metadata.json()
    document = metadata.json()
    assert document["resource"] == RESOURCE
    assert document["authorization_servers"] == [door.issuer]
    assert document["bearer_methods_supported"] == ["header"]
    assert "resource_signing_alg_values_supported" not in document  # that describes signed responses, not tokens
    assert [(r.principal, r.door, r.outcome.value, r.detail) for r in rows] == [
        ("unknown", "mcp-http", "denied", "no bearer token")
    ]


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("wrong audience", "JWT audience is not this server's resource URI"),
        ("expired", "expired JWT"),
        ("bad signature", "JWT signature does not verify"),
        ("other issuer", "JWT from another issuer"),
    ],
)
async def test_a_jwt_for_another_audience_expired_or_badly_signed_gets_401_and_is_audited(
    tmp_path: Path, database_target: str | Path, case: str, reason: str
) -> None:
    async with http_door(tmp_path, database_target) as door:
        good = door.jwt("alice")
        bad = {
            "wrong audience": door.jwt("alice", aud="https://other.example.com/mcp"),
            "expired": door.jwt("alice", exp=int(time.time()) - 3600),
            "bad signature": door.jwt("alice", key=rsa_key()),
            "other issuer": door.jwt("alice", iss="https://evil.example.com"),
        }[case]
        accepted = await door.get("/approvals", good)  # a valid token passes the check (operator: 403 here)
        refused = await door.post("/mcp", bad, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        rows = await denied_rows(door.app)
        chain = await door.app.audit.check_chain()

    assert accepted.status_code == 403
    assert refused.status_code == 401
    challenge = refused.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token"') and f'resource_metadata="{METADATA}"' in challenge
    assert len(rows) == 1 and rows[0].principal == "unknown" and rows[0].door == "mcp-http"
    assert rows[0].detail is not None and rows[0].detail.startswith(reason)
    assert rows[0].arguments["bearer"] == "jwt"
    assert bad not in json.dumps(rows[0].arguments) + (rows[0].detail or "")
    assert chain.ok


async def test_a_revoked_static_token_is_refused_from_the_next_request_on(
    tmp_path: Path, database_target: str | Path
) -> None:
    async with http_door(tmp_path, database_target) as door:
        token = door.static("ci-bot", Role.OPERATOR)
        async with door.client(token) as session:
            before = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007"})
        door.tokens.revoke("ci-bot")
        after = await door.post("/mcp", token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        rows = await denied_rows(door.app)

    assert not before.isError
    assert after.status_code == 401 and 'error="invalid_token"' in after.headers["WWW-Authenticate"]
    assert rows[-1].detail is not None and rows[-1].detail.startswith("static token 'ci-bot' was revoked")
    assert token not in json.dumps(rows[-1].arguments)


async def test_an_operator_token_reads_and_proposes_as_itself_but_is_refused_on_the_approval_endpoints(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    async with http_door(tmp_path, database_target) as door:
        token = door.jwt("olivia", roles=["operator"])
        async with door.client(token) as session:
            read = await session.call_tool("assets-get_pump_details", {"pump_id": "PUMP-007"})
            proposed = await session.call_tool("work_orders-create_work_order", ORDER)
        assert proposed.structuredContent is not None
        approval_id = proposed.structuredContent["approval_id"]
        listing = await door.get("/approvals", token)
        approve = await door.post(f"/approvals/{approval_id}/approve", token)
        reject = await door.post(f"/approvals/{approval_id}/reject", token, {"reason": "not needed"})
        parked = await door.app.approvals.get(approval_id)
        rows = await door.app.audit.tail(20)

    assert read.structuredContent is not None and read.structuredContent["pump_id"] == "PUMP-007"
    assert proposed.structuredContent["status"] == "pending_approval"
    assert parked.requested_by == "olivia" and parked.status.value == "pending"
    assert (listing.status_code, approve.status_code, reject.status_code) == (403, 403, 403)
    challenges = {r.headers.get("WWW-Authenticate") for r in (listing, approve, reject)}
    assert challenges == {'Bearer error="insufficient_scope", scope="supervisor"'}
    assert "supervisor role" in approve.json()["error"]
    tool_rows = [r for r in rows if r.door == "mcp"]
    # the token's subject; the client's name only as an asserted label beside it
    assert {r.principal for r in tool_rows} == {"olivia (asserted: mcp:ops-console)"}
    refusals = [r for r in rows if r.door == "mcp-http" and r.outcome.value == "denied"]
    assert [r.function for r in refusals] == ["approvals-list", "approvals-approve", "approvals-reject"]


async def test_a_supervisor_token_approves_another_principals_proposal_but_not_its_own(
    tmp_path: Path, database_target: str | Path
) -> None:
    async with http_door(tmp_path, database_target) as door:
        supervisor = door.static("sam", Role.SUPERVISOR)
        async with door.client(door.jwt("olivia")) as session:
            theirs = await session.call_tool("work_orders-create_work_order", ORDER)
        async with door.client(supervisor) as session:
            mine = await session.call_tool(
                "work_orders-create_work_order", {**ORDER, "summary": "Replace the seal kit"}
            )
        assert theirs.structuredContent is not None and mine.structuredContent is not None
        listing = await door.get("/approvals", supervisor)
        approved = await door.post(f"/approvals/{theirs.structuredContent['approval_id']}/approve", supervisor)
        own = await door.post(f"/approvals/{mine.structuredContent['approval_id']}/approve", supervisor)
        own_parked = await door.app.approvals.get(mine.structuredContent["approval_id"])
        chain = await door.app.audit.check_chain()

    assert listing.status_code == 200 and listing.json()["total"] == 2
    assert approved.status_code == 200, approved.text
    assert (approved.json()["outcome"], approved.json()["decided_by"]) == ("executed", "sam")
    assert own.status_code == 403 and "four eyes" in own.json()["error"]
    assert own_parked.status.value == "pending"
    assert chain.ok


async def test_an_unknown_or_malformed_bearer_token_is_refused_and_every_refusal_leaves_a_verifiable_chain(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    async with http_door(tmp_path, database_target) as door:
        door.static("ci-bot", Role.OPERATOR)
        attempts = [
            await door.post("/mcp", "pumpops_not-a-real-token", {}),
            await door.post("/mcp", "a.b.c", {}),
            await door.post("/approvals/APR-1/approve", "garbage"),
            await door.get("/approvals"),
        ]
        rows = await denied_rows(door.app)
        chain = await door.app.audit.check_chain()

    assert [a.status_code for a in attempts] == [401, 401, 401, 401]
    assert [r.arguments["bearer"] for r in rows] == ["static", "jwt", "other", "none"]
    assert {r.principal for r in rows} == {"unknown"}
    assert all("pumpops_not-a-real-token" not in json.dumps(r.arguments) + (r.detail or "") for r in rows)
    assert chain.ok and chain.rows_checked >= 4


def test_allow_remote_without_authentication_is_refused_at_start(tmp_path: Path) -> None:
    """Refused before the database is opened: no backend to run it on."""
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Database": {"Path": "data/test.db"}, "Qdrant": {"Path": ":memory:"}}))
    result = run_pumpops(settings, "mcp", "--http", "--host", "0.0.0.0", "--allow-remote")
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "no authentication is configured" in message and "pumpops tokens create" in message
    assert "Mcp.Auth.Issuer" in message


async def test_an_unauthenticated_loopback_client_acts_as_the_os_user_so_that_supervisor_cannot_approve_it(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    async with http_door(
        tmp_path, database_target, auth=False, Identity={"Roles": {os_user(): ["supervisor"]}}
    ) as door:
        async with door.client(None, name="someone-else") as session:
            proposed = await session.call_tool("work_orders-create_work_order", ORDER)
        assert proposed.structuredContent is not None, proposed.content
        approval_id = proposed.structuredContent["approval_id"]
        parked = await door.app.approvals.get(approval_id)
        supervisor = local_caller(door.app.settings, "approvals")
        with pytest.raises(SelfApprovalError):
            await door.app.approvals.approve(approval_id, supervisor)
        still = await door.app.approvals.get(approval_id)
        rows = [r for r in await door.app.audit.tail(20) if r.door == "mcp"]

    assert supervisor.has(Role.SUPERVISOR)
    assert parked.requested_by == os_user()
    assert still.status.value == "pending"
    # the client's chosen name is only a label beside the OS user; unproven, so no role counts
    assert {r.principal for r in rows} == {f"{os_user()} (asserted: mcp:someone-else)"}


async def test_unauthenticated_loopback_clients_under_different_names_share_one_pending_limit(
    tmp_path: Path, database_target: str | Path
) -> None:
    async with http_door(tmp_path, database_target, auth=False, Approval={"MaxPendingPerPrincipal": 1}) as door:
        async with door.client(None, name="first") as session:
            first = await session.call_tool("work_orders-create_work_order", ORDER)
        async with door.client(None, name="second") as session:
            second = await session.call_tool(
                "work_orders-create_work_order", {**ORDER, "summary": "Replace the seal kit"}
            )
        pending = await door.app.approvals.list("pending", limit=10, offset=0)

    assert first.structuredContent is not None and first.structuredContent["status"] == "pending_approval"
    assert second.structuredContent is not None
    assert (second.structuredContent["status"], second.structuredContent["limit"]) == ("denied", 1)
    assert pending.total == 1


async def test_deleting_the_tokens_file_of_a_running_server_refuses_every_request_instead_of_opening_the_door(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    tokens = TokenFile(tmp_path / "tokens.json")
    token = tokens.create("ci-bot", [Role.OPERATOR])[1]
    async with http_door(tmp_path, database_target, auth=False) as door:
        before = await door.post("/mcp", token, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        tokens.path.unlink()
        anonymous = await door.post("/mcp", None, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        former = await door.post("/mcp", token, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        rows = await denied_rows(door.app)

    assert before.status_code != 401
    assert (anonymous.status_code, former.status_code) == (401, 401)
    assert len(rows) == 2 and rows[0].detail == "no bearer token"
    assert rows[1].detail is not None and "tokens file" in rows[1].detail and "is missing" in rows[1].detail


async def test_a_tokens_file_created_while_a_loopback_server_runs_turns_tokens_on_at_once(
    tmp_path: Path, database_target: str | Path
) -> None:
    async with http_door(tmp_path, database_target, auth=False) as door:
        open_before = await door.get("/approvals")
        door.static("ci-bot", Role.OPERATOR)
        after = await door.get("/approvals")

    assert open_before.status_code == 403  # unauthenticated: through the door, refused by role
    assert after.status_code == 401


def test_a_tokens_roles_are_the_default_roles_plus_the_identity_roles_of_its_name_plus_its_own() -> None:
    identity = IdentitySettings.model_validate(
        {"DefaultRoles": ["auditor"], "Roles": {"sam": ["supervisor"], "other": ["operator"]}}
    )

    assert token_roles(identity, "sam", [Role.OPERATOR]) == {Role.AUDITOR, Role.SUPERVISOR, Role.OPERATOR}
    assert token_roles(identity, "sam", []) == {Role.AUDITOR, Role.SUPERVISOR}  # no claim takes a role away
    assert token_roles(identity, "nobody", [Role.OPERATOR]) == {Role.AUDITOR, Role.OPERATOR}


@pytest.mark.parametrize("kind", ["static", "jwt"])
async def test_a_supervisor_role_from_identity_roles_is_kept_when_the_token_grants_only_operator(
    tmp_path: Path, database_target: str | Path, kind: str
) -> None:
    async with http_door(tmp_path, database_target, Identity={"Roles": {"sam": ["supervisor"]}}) as door:
        token = door.static("sam", Role.OPERATOR) if kind == "static" else door.jwt("sam", roles=["operator"])
        listing = await door.get("/approvals", token)

    assert listing.status_code == 200, listing.text


async def test_the_approval_endpoints_check_the_role_first_and_audit_an_unknown_id_and_a_missing_reason(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    async with http_door(tmp_path, database_target) as door:
        supervisor = door.static("sam", Role.SUPERVISOR)
        operator = door.static("olivia", Role.OPERATOR)
        async with httpx.AsyncClient(timeout=WAIT) as http:
            bad_body_operator = await http.post(
                f"{door.url}/approvals/APR-DEADBEEF/reject",
                content=b"nope",
                headers={"Authorization": f"Bearer {operator}"},
            )
            bad_body = await http.post(
                f"{door.url}/approvals/APR-DEADBEEF/reject",
                content=b"nope",
                headers={"Authorization": f"Bearer {supervisor}"},
            )
        unknown = await door.post("/approvals/APR-DEADBEEF/approve", supervisor)
        unknown_reject = await door.post("/approvals/APR-DEADBEEF/reject", supervisor, {"reason": "duplicate"})
        rows = [r for r in await door.app.audit.tail(20) if r.door == "mcp-http"]
        chain = await door.app.audit.check_chain()

    assert [bad_body_operator.status_code, bad_body.status_code, unknown.status_code, unknown_reject.status_code] == [
        403,
        400,
        404,
        404,
    ]
    assert [(r.function, r.principal, r.outcome.value) for r in rows] == [
        ("approvals-reject", "olivia", "denied"),
        ("approvals-reject", "sam", "denied"),
        ("approvals-approve", "sam", "denied"),
        ("approvals-reject", "sam", "denied"),
    ]
    assert all(r.arguments == {"approval_id": "APR-DEADBEEF"} for r in rows)
    assert chain.ok


def test_a_remote_bind_with_an_issuer_but_no_resource_uri_is_refused_at_start(tmp_path: Path) -> None:
    """Refused before the database is opened: no backend to run it on."""
    settings = tmp_path / "appsettings.json"
    auth = {"Issuer": "https://login.example.com"}
    settings.write_text(
        json.dumps({"Database": {"Path": "data/test.db"}, "Qdrant": {"Path": ":memory:"}, "Mcp": {"Auth": auth}})
    )
    result = run_pumpops(settings, "mcp", "--http", "--host", "0.0.0.0", "--allow-remote")
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "Mcp.Auth.ResourceUri" in message and "http://0.0.0.0:" in message
