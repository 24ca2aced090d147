"""Who is calling the HTTP MCP door, proven by a bearer token: static API tokens and OAuth 2.1 JWT access tokens.

The server is an OAuth 2.1 resource server as the MCP specification describes: every request to ``/mcp``
and to the approval endpoints carries ``Authorization: Bearer <token>``; one without a valid token is
answered 401 with ``WWW-Authenticate: Bearer ... resource_metadata="<origin>/.well-known/oauth-protected-resource/mcp"``
and audited (principal ``unknown``, door ``mcp-http``, the reason; never the token). The metadata document
(RFC 9728) is served at that path-inserted address (RFC 9728 §3.1, which the header points at) and at the
origin's plain well-known path (for clients that try only that).

Authentication is required once it is configured (the tokens file exists, or ``Mcp.Auth.Issuer`` is set)
and always on a server listening on a non-loopback address. A loopback server with neither serves
unauthenticated clients as the OS user running the server (the only person a loopback client can be
attributed to), with proof NONE and so no role: it can read and propose, never decide, and its proposals
are the OS user's for four eyes and the pending limit. The client's self-chosen name is only a label.

A request's identity is a `TokenUser` in the ASGI scope (``scope["user"]``); the SDK's session manager
binds each MCP session to it, so another token cannot use the session, and `http_caller` turns it into
the `CallContext` of every tool call. The client's self-declared name is only the context's ``label``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import jwt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from core.errors import PumpOpsError
from governance import PrincipalError, principal_name
from governance.api_tokens import TOKEN_PREFIX, ApiToken, TokenFile, TokenFileError
from governance.audit_log import AuditLog, AuditOutcome
from governance.identity import CallContext
from governance.roles import Proof, Role, roles_for
from kernel_setup.identity_settings import IdentitySettings
from kernel_setup.local_identity import os_user
from kernel_setup.mcp_auth_settings import McpAuthSettings
from kernel_setup.settings import Settings

DOOR = "mcp-http"
"""The door of rows the HTTP door writes itself: refused authentications and approval decisions."""
METADATA_PATH = "/.well-known/oauth-protected-resource"
AUTH_FUNCTION = "mcp-authenticate"
"""The audit row's function for a refused authentication."""
UNKNOWN = "unknown"
STATIC_ISSUER = "pumpops-tokens"
"""The issuer the SDK's session binding records for a static token."""
_JWKS_TIMEOUT_S = 10.0
_JWKS_MIN_REFETCH_S = 10.0
"""A token naming a key the cached set lacks refetches the set, at most this often (keys rotate; floods don't)."""
_LEEWAY_S = 30
"""Clock skew tolerated on ``exp`` and ``nbf``."""


class AuthenticationRefused(PumpOpsError):
    """A bearer token was missing or not accepted; ``reason`` is audited, ``public`` is what the client is told."""

    def __init__(self, reason: str, public: str, *, error: str | None = "invalid_token", status: int = 401) -> None:
        super().__init__(reason)
        self.reason = reason
        self.public = public
        self.error = error
        self.status = status


class TokenUser(AuthenticatedUser):
    """The proven caller of one HTTP request: its principal, how it was proven, and its roles."""

    def __init__(self, principal: str, proof: Proof, roles: frozenset[Role], issuer: str) -> None:
        scopes = sorted(role.value for role in roles)
        # token left out on purpose: nothing downstream needs the secret, so it is not carried around.
        access = AccessToken(token="", client_id=principal, scopes=scopes, subject=principal, claims={"iss": issuer})
        super().__init__(access)
        self.principal = principal
        self.proof = proof
        self.roles = roles


def http_caller(request: object, *, label: str, session: str | None) -> CallContext | None:
    """The `CallContext` of a request served over HTTP, or None for one that did not come over HTTP (stdio).

    A request with a `TokenUser` acts as the token's principal, with ``label`` (the client's name) beside it;
    one without (an unauthenticated loopback server) acts as the OS user running the server with proof NONE
    (no role counts) and ``label`` beside it: a client cannot pick the name four eyes and the pending limit compare.
    """
    scope = getattr(request, "scope", None)
    if not isinstance(scope, Mapping):
        return None
    user = scope.get("user")
    if isinstance(user, TokenUser):
        return CallContext(
            principal=user.principal, session=session, door="mcp", proof=user.proof, roles=user.roles, label=label
        )
    return CallContext(principal=os_user(), session=session, door="mcp", proof=Proof.NONE, label=label)


def request_caller(request: Request) -> CallContext:
    """The `CallContext` of a request to the door's own endpoints (approvals): door ``mcp-http``."""
    user = request.scope.get("user")
    if isinstance(user, TokenUser):
        return CallContext(principal=user.principal, door=DOOR, proof=user.proof, roles=user.roles)
    return CallContext(principal=UNKNOWN, door=DOOR)


def token_roles(identity: IdentitySettings, principal: str, own: Iterable[Role]) -> frozenset[Role]:
    """The roles of a token's principal, one rule for both kinds of token: a union, never a replacement.

    ``Identity.DefaultRoles`` | ``Identity.Roles[principal]`` (names matched as `roles_for` matches them)
    | ``own``, the token's own roles (the tokens file's for a static token, the role claim's for a JWT).
    """
    return roles_for(principal, identity.roles, identity.default_roles) | frozenset(own)


def auth_configured(settings: Settings) -> bool:
    """Whether the HTTP door requires tokens wherever it listens: the tokens file exists, or an issuer is set."""
    auth = settings.mcp.auth
    return auth.issuer is not None or TokenFile(settings.resolve(auth.tokens_file)).exists()


def resource_uri(settings: McpAuthSettings, host: str, port: int) -> str:
    """This server's resource URI: ``Mcp.Auth.ResourceUri``, else ``http://HOST:PORT/mcp``."""
    if settings.resource_uri is not None:
        return settings.resource_uri.rstrip("/")
    bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{bracketed}:{port}/mcp"


def metadata_url(resource: str) -> str:
    """Where the metadata of ``resource`` is: the well-known path inserted before its path (RFC 9728 §3.1)."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{parts.path.rstrip('/')}"


@dataclass
class _CachedTokens:
    stamp: tuple[int, int, int] | None
    """The file's (mtime, size, inode) when read; None before the first read."""
    entries: list[ApiToken]


class JwksCache:
    """The issuer's signing keys, fetched over HTTP and kept for ``Mcp.Auth.JwksCacheSeconds``."""

    def __init__(self, url: str, max_age_s: float) -> None:
        self.url = url
        self.max_age_s = max_age_s
        self._keys: jwt.PyJWKSet | None = None
        self._fetched_at = float("-inf")
        self._lock = anyio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK:
        """The key ``kid`` names (or the only key, for a token without ``kid``).

        Raises:
            AuthenticationRefused: the set cannot be fetched (503), or has no such key (401).
        """
        async with self._lock:
            now = time.monotonic()
            stale = now - self._fetched_at > self.max_age_s
            if (
                self._keys is None
                or stale
                or (_find(self._keys, kid) is None and now - self._fetched_at > _JWKS_MIN_REFETCH_S)
            ):
                await self._fetch()
            assert self._keys is not None
            found = _find(self._keys, kid)
        if found is None:
            raise AuthenticationRefused(
                f"the JWT's signing key {kid!r} is not in {self.url}", "The token is not valid."
            )
        return found

    async def _fetch(self) -> None:
        try:
            async with httpx.AsyncClient(timeout=_JWKS_TIMEOUT_S, follow_redirects=False) as client:
                response = await client.get(self.url)
                response.raise_for_status()
                self._keys = jwt.PyJWKSet.from_dict(response.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            raise AuthenticationRefused(
                f"cannot fetch the issuer's signing keys from {self.url}: {exc}",
                "The server cannot check tokens right now; try again shortly.",
                error=None,
                status=503,
            ) from exc
        self._fetched_at = time.monotonic()


def _find(keys: jwt.PyJWKSet, kid: str | None) -> jwt.PyJWK | None:
    if kid is None:
        return keys.keys[0] if len(keys.keys) == 1 else None
    return next((key for key in keys.keys if key.key_id == kid), None)


class Authenticator:
    """Checks bearer tokens against the tokens file and the OAuth issuer; one per server."""

    def __init__(
        self, settings: McpAuthSettings, identity: IdentitySettings, tokens_path: Path, resource: str, *, remote: bool
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.tokens = TokenFile(tokens_path)
        self.resource = resource
        self.remote = remote
        jwks = settings.jwks()
        self.jwks = None if jwks is None else JwksCache(jwks, settings.jwks_cache_seconds)
        self._cached = _CachedTokens(stamp=None, entries=[])
        self._required = remote or settings.issuer is not None or self.tokens.exists()

    @property
    def required(self) -> bool:
        """Whether requests need a token: on a non-loopback address, or once a tokens file or issuer is configured.

        Decided at start and only ever switched on: a tokens file created while the server runs turns tokens on
        at once, but one deleted or made unreadable never turns them off (static tokens are then refused).
        """
        if not self._required and self.tokens.exists():
            self._required = True
        return self._required

    async def authenticate(self, authorization: str | None) -> TokenUser:
        """The caller proven by an ``Authorization`` header.

        Raises:
            AuthenticationRefused: no bearer token, or one that is unknown, revoked, expired, for another
                audience, from another issuer or badly signed.
        """
        if not authorization or not authorization[:7].lower() == "bearer ":
            raise AuthenticationRefused(
                "no bearer token", "This server needs a bearer token (Authorization: Bearer <token>).", error=None
            )
        token = authorization[7:].strip()
        if token.startswith(TOKEN_PREFIX):
            return await self._static(token)
        if self.settings.issuer is not None and token.count(".") == 2:
            return await self._jwt(token)
        raise AuthenticationRefused(
            "not a PumpOps token nor a JWT from the configured issuer", "The token is not valid."
        )

    async def _static(self, token: str) -> TokenUser:
        entries = await anyio.to_thread.run_sync(self._token_entries)
        digest_match = TokenFile.match(entries, token)
        if digest_match is None:
            raise AuthenticationRefused("unknown static token", "The token is not valid.")
        if not digest_match.active:
            raise AuthenticationRefused(
                f"static token {digest_match.name!r} was revoked at {digest_match.revoked_at}", "The token was revoked."
            )
        roles = token_roles(self.identity, digest_match.name, digest_match.roles)
        return TokenUser(digest_match.name, Proof.TOKEN, roles, STATIC_ISSUER)

    def _token_entries(self) -> list[ApiToken]:
        """The tokens file's entries, read again only when the file changed (a revocation applies at once)."""
        try:
            status = self.tokens.path.stat()
            stamp = (status.st_mtime_ns, status.st_size, status.st_ino)
        except FileNotFoundError:
            # Fail closed: a missing file never opens the door (see `required`); it only accepts no static token.
            raise AuthenticationRefused(
                f"the tokens file {self.tokens.path} is missing, so no static token is accepted",
                "The token is not valid.",
            ) from None
        except OSError as exc:
            raise AuthenticationRefused(
                f"the tokens file {self.tokens.path} cannot be read: {exc.strerror or exc}",
                "The server cannot check tokens right now.",
                error=None,
                status=503,
            ) from exc
        if stamp != self._cached.stamp:
            try:
                self._cached = _CachedTokens(stamp=stamp, entries=self.tokens.read())
            except TokenFileError as exc:
                raise AuthenticationRefused(
                    f"the tokens file cannot be read: {exc}",
                    "The server cannot check tokens right now.",
                    error=None,
                    status=503,
                ) from exc
        return self._cached.entries

    async def _jwt(self, token: str) -> TokenUser:
        assert self.jwks is not None and self.settings.issuer is not None
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise AuthenticationRefused(f"unreadable JWT header: {exc}", "The token is not valid.") from exc
        algorithm = header.get("alg")
        if algorithm not in self.settings.algorithms:
            raise AuthenticationRefused(
                f"JWT algorithm {algorithm!r} is not one of Mcp.Auth.Algorithms", "The token is not valid."
            )
        key = await self.jwks.key(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=list(self.settings.algorithms),
                audience=[self.resource, self.resource + "/"],
                issuer=self.settings.issuer,
                leeway=_LEEWAY_S,
                options={"require": ["exp", "iss", "aud", self.settings.principal_claim]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise AuthenticationRefused("expired JWT", "The token has expired.") from exc
        except jwt.InvalidAudienceError as exc:
            raise AuthenticationRefused(
                f"JWT audience is not this server's resource URI {self.resource}",
                f"The token was not issued for this server (its audience must be {self.resource}).",
            ) from exc
        except jwt.InvalidIssuerError as exc:
            raise AuthenticationRefused(
                "JWT from another issuer", "The token is not from the accepted issuer."
            ) from exc
        except jwt.ImmatureSignatureError as exc:
            raise AuthenticationRefused(
                "JWT not valid yet (nbf or iat in the future)", "The token is not valid yet."
            ) from exc
        except jwt.InvalidSignatureError as exc:
            raise AuthenticationRefused("JWT signature does not verify", "The token is not valid.") from exc
        except jwt.PyJWTError as exc:
            raise AuthenticationRefused(f"invalid JWT: {exc}", "The token is not valid.") from exc
        try:
            principal = principal_name(str(claims[self.settings.principal_claim]), option="the token's subject")
        except PrincipalError as exc:
            raise AuthenticationRefused(
                f"JWT {self.settings.principal_claim} is not a valid principal name", "The token is not valid."
            ) from exc
        claimed = _claimed_roles(claims.get(self.settings.role_claim) if self.settings.role_claim else None)
        roles = token_roles(self.identity, principal, claimed)
        return TokenUser(principal, Proof.OAUTH, roles, self.settings.issuer)

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "bearer_methods_supported": ["header"],
            "resource_name": "PumpOps MCP server",
        }
        if self.settings.issuer is not None:
            document["authorization_servers"] = [self.settings.issuer]
        if self.settings.scopes:
            document["scopes_supported"] = list(self.settings.scopes)
        return document

    def metadata_routes(self) -> list[Route]:
        """The metadata document at the origin's well-known path and at the RFC 9728 §3.1 path-suffixed one."""

        async def serve(_: Request) -> Response:
            return JSONResponse(self.metadata(), headers={"Cache-Control": "public, max-age=3600"})

        suffix = urlsplit(self.resource).path.rstrip("/")
        paths = dict.fromkeys([METADATA_PATH, METADATA_PATH + suffix])
        return [Route(path, endpoint=serve, methods=["GET"]) for path in paths]


def _claimed_roles(value: object) -> tuple[Role, ...]:
    """Roles named by a claim: a list, or a space-separated string; names that are not roles are ignored."""
    names = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
    known = {role.value: role for role in Role}
    return tuple(
        known[name.strip().lower()] for name in names if isinstance(name, str) and name.strip().lower() in known
    )


class RequireBearer:
    """ASGI middleware: Host and Origin checked, then a valid bearer token required on every path but the metadata.

    A refusal is answered 401 (or 503 when the keys cannot be fetched) with the ``WWW-Authenticate`` header
    pointing at the metadata, and audited.
    """

    def __init__(
        self, app: ASGIApp, *, authenticator: Authenticator, audit: AuditLog, security: TransportSecuritySettings
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.audit = audit
        self.security = TransportSecurityMiddleware(security)
        self.metadata_url = metadata_url(authenticator.resource)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass metadata requests and (unauthenticated loopback) everything else on; refuse a bad token."""
        if scope["type"] != "http" or scope["path"].startswith(METADATA_PATH):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = await self.security.validate_request(request, is_post=False)
        if refused is not None:  # a foreign Host or Origin learns nothing about authentication
            await refused(scope, receive, send)
            return
        if not self.authenticator.required:
            await self.app(scope, receive, send)
            return
        authorization = request.headers.get("authorization")
        try:
            user = await self.authenticator.authenticate(authorization)
        except AuthenticationRefused as exc:
            await self._record(request, authorization, exc.reason)
            await self._refuse(exc)(scope, receive, send)
            return
        scope["user"] = user
        scope["auth"] = AuthCredentials(user.scopes)
        await self.app(scope, receive, send)

    async def _record(self, request: Request, authorization: str | None, reason: str) -> None:
        token = (authorization or "")[7:].strip()
        kind = (
            "none"
            if not token
            else "static"
            if token.startswith(TOKEN_PREFIX)
            else "jwt"
            if token.count(".") == 2
            else "other"
        )
        client = request.client.host if request.client is not None else None
        arguments = {"method": request.method, "path": request.url.path, "bearer": kind, "client": client}
        await self.audit.record(
            function=AUTH_FUNCTION,
            arguments=arguments,
            outcome=AuditOutcome.DENIED,
            call=CallContext(principal=UNKNOWN, door=DOOR),
            detail=reason,
        )

    def _refuse(self, exc: AuthenticationRefused) -> Response:
        parts = [] if exc.error is None else [f'error="{exc.error}"', f'error_description="{exc.public}"']
        parts.append(f'resource_metadata="{self.metadata_url}"')
        body = {"error": exc.error or "unauthorized", "error_description": exc.public}
        return JSONResponse(body, status_code=exc.status, headers={"WWW-Authenticate": "Bearer " + ", ".join(parts)})
