"""Static API tokens for the HTTP MCP door: created, listed and revoked by `pumpops tokens`, stored hashed.

A token is ``pumpops_`` followed by 32 random bytes (URL-safe base64). Only its SHA-256 is stored: the
secret has 256 bits of entropy, so a plain hash cannot be reversed or guessed, and a slow password hash
would add nothing but latency to every request. The secret is shown once, when it is created.

The file is JSON, written atomically (a temporary file in the same folder, renamed over the old one) with
permissions 0600. A token names its principal (``NAME``) and its roles; revoking keeps the entry, marked
with the time, so `list` still shows it and the name can be given to a new token.

Every read-modify-write (create, revoke) holds an exclusive ``flock`` on the sidecar ``<file>.lock``, so two
commands at once cannot undo each other (a create racing a revoke would otherwise write the token back active).
Readers need no lock: the file is only ever replaced whole.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.errors import PumpOpsError
from governance.principals import principal_name, same_principal
from governance.roles import Role

TOKEN_PREFIX = "pumpops_"
"""How a static token starts, so the door can tell it from an OAuth JWT without trying both."""
FILE_VERSION = 1
_SECRET_BYTES = 32


class TokenFileError(PumpOpsError):
    """The tokens file cannot be read or written, or a token command was given bad input."""


@dataclass(frozen=True)
class ApiToken:
    """One entry of the tokens file: never the secret, only its hash."""

    name: str
    roles: tuple[Role, ...]
    created_at: str
    sha256: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        """Whether requests carrying it are accepted."""
        return self.revoked_at is None

    def listing(self) -> dict[str, Any]:
        """What `pumpops tokens list` shows: everything but the hash."""
        return {
            "name": self.name,
            "roles": [role.value for role in self.roles],
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


def token_hash(secret: str) -> str:
    """The stored form of a token: SHA-256 of its text, hex."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class TokenFile:
    """The tokens file at ``path``; each method reads it afresh, and writes replace it atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        """Whether the file exists (once it does, the HTTP door requires a token on every request)."""
        return self.path.is_file()

    def read(self) -> list[ApiToken]:
        """Every entry, revoked ones included; an absent file has none.

        Raises:
            TokenFileError: the file cannot be read or is not a tokens file.
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise TokenFileError(f"Cannot read the tokens file {self.path}: {exc.strerror or exc}.") from exc
        return _parse(text, self.path)

    def create(self, name: str, roles: Iterable[Role]) -> tuple[ApiToken, str]:
        """Add a token for ``name`` with ``roles``; returns the entry and the secret (shown once, never stored).

        Raises:
            TokenFileError: an active token already has that name, or the file cannot be written.
            PrincipalError: ``name`` is not a valid principal name.
        """
        checked = principal_name(name, option="NAME")
        wanted = tuple(dict.fromkeys(roles)) or (Role.OPERATOR,)
        with self._locked():
            entries = self.read()
            taken = next((entry for entry in entries if entry.active and same_principal(entry.name, checked)), None)
            if taken is not None:
                raise TokenFileError(
                    f"An active token is already named {taken.name!r}. Revoke it first with `pumpops tokens revoke "
                    f"{taken.name}`, or choose another name."
                )
            secret = TOKEN_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(_SECRET_BYTES)).decode().rstrip("=")
            entry = ApiToken(name=checked, roles=wanted, created_at=_now(), sha256=token_hash(secret))
            self._write([*entries, entry])
        return entry, secret

    def revoke(self, name: str) -> ApiToken:
        """Mark the active token ``name`` revoked; requests carrying it are refused from then on.

        Raises:
            TokenFileError: no active token has that name, or the file cannot be written.
        """
        with self._locked():
            entries = self.read()
            for index, entry in enumerate(entries):
                if entry.active and same_principal(entry.name, name):
                    revoked = ApiToken(**{**entry.__dict__, "revoked_at": _now()})
                    entries[index] = revoked
                    self._write(entries)
                    return revoked
        active = ", ".join(entry.name for entry in entries if entry.active) or "none"
        raise TokenFileError(f"No active token is named {name!r}. Active tokens: {active} (see `pumpops tokens list`).")

    def find(self, secret: str) -> ApiToken | None:
        """The entry whose hash is the secret's (revoked or not); None if none."""
        return self.match(self.read(), secret)

    @staticmethod
    def match(entries: Iterable[ApiToken], secret: str) -> ApiToken | None:
        """The entry of ``entries`` whose hash is the secret's, every hash compared in constant time."""
        digest = token_hash(secret)
        found = None
        for entry in entries:
            if hmac.compare_digest(entry.sha256, digest):
                found = entry
        return found

    @property
    def lock_path(self) -> Path:
        """The sidecar file whose ``flock`` serialises read-modify-writes of the tokens file."""
        return self.path.with_name(self.path.name + ".lock")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the exclusive lock for one read-modify-write (blocks until another process or thread releases it)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise TokenFileError(f"Cannot lock the tokens file {self.path}: {exc.strerror or exc}.") from exc
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield
        finally:
            os.close(handle)  # closing the descriptor releases the lock

    def _write(self, entries: list[ApiToken]) -> None:
        document = {
            "version": FILE_VERSION,
            "tokens": [{**entry.listing(), "sha256": entry.sha256} for entry in entries],
        }
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)
        except OSError as exc:
            raise TokenFileError(f"Cannot write the tokens file {self.path}: {exc.strerror or exc}.") from exc
        try:
            os.fchmod(handle, 0o600)
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise TokenFileError(f"Cannot write the tokens file {self.path}: {exc.strerror or exc}.") from exc


def _parse(text: str, path: Path) -> list[ApiToken]:
    problem = f"The tokens file {path} is not a PumpOps tokens file"
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TokenFileError(f"{problem} (not JSON: {exc.msg} at line {exc.lineno}).") from exc
    if not isinstance(document, dict) or not isinstance(document.get("tokens"), list):
        raise TokenFileError(f'{problem}: expected {{"version": 1, "tokens": [...]}}.')
    entries = []
    for raw in document["tokens"]:
        try:
            entries.append(
                ApiToken(
                    name=str(raw["name"]),
                    roles=tuple(Role(role) for role in raw["roles"]),
                    created_at=str(raw["created_at"]),
                    sha256=str(raw["sha256"]),
                    revoked_at=None if raw.get("revoked_at") is None else str(raw["revoked_at"]),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise TokenFileError(
                f"{problem}: an entry needs name, roles (of {', '.join(r.value for r in Role)}), created_at and "
                "sha256; create tokens with `pumpops tokens create NAME --role ROLE` instead of editing the file."
            ) from exc
    return entries


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
