"""The plant's settings sections: the site, its live telemetry sources, alarms raised from telemetry, automatic triage.

PumpOps only reads from the plant: no setting here can make it write to an OPC UA server or publish to an
MQTT topic other than `Triage.MqttTopic`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ConfigDict, Field, SecretStr, field_validator, model_validator

from kernel_setup.settings_sections import Section, alias
from twin.models import SensorType, Severity

SENSOR_TYPES = tuple(t.value for t in SensorType)
SEVERITIES = tuple(s.value for s in Severity)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# A NodeId in the string form of OPC UA Part 6 (5.3.1.10): an optional namespace (index or URI), then a numeric,
# string, GUID or opaque (base64) identifier.
_NODE_ID = re.compile(
    r"(?:ns=\d+;|nsu=[^;]+;)?"
    r"(?:i=\d+|s=.+|g=[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}|b=[A-Za-z0-9+/]+={0,2})",
    re.DOTALL,
)


class PlantSettings(Section):
    """The site itself: what its records leave unsaid."""

    model_config = ConfigDict(alias_generator=alias)
    time_zone: str | None = None
    """The site's IANA time zone (``Europe/Berlin``) for imported timestamps without an offset; None refuses them."""


class OpcUaNode(Section):
    """One OPC UA variable and the pump sensor its value is: ``{"Pump": "PUMP-001", "Sensor": "vibration", ...}``."""

    model_config = ConfigDict(alias_generator=alias)
    pump: str = Field(min_length=1)
    sensor: str
    node_id: str = Field(min_length=1)
    """The variable's NodeId as OPC UA writes it: ``ns=2;s=Station1.P1.Vibration`` or ``ns=2;i=1001``."""

    @field_validator("sensor")
    @classmethod
    def _known_sensor(cls, value: str) -> str:
        return _sensor_type(value)

    @field_validator("node_id")
    @classmethod
    def _node_id(cls, value: str) -> str:
        if not _NODE_ID.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an OPC UA NodeId; write it as ns=2;s=Station1.P1.Vibration (a string id), "
                "ns=2;i=1001 (a number), ns=2;g=<GUID> or ns=2;b=<base64>"
            )
        return value


class OpcUaSourceSettings(Section):
    """An OPC UA server to subscribe to (read-only: only Browse/Read/Subscribe services are used)."""

    model_config = ConfigDict(alias_generator=alias)
    name: str
    endpoint: str
    """``opc.tcp://host:4840/path``."""
    security_policy: str = "None"
    """``None``, ``Basic256Sha256``, ``Aes128Sha256RsaOaep`` or ``Aes256Sha256RsaPss``."""
    security_mode: str = "None"
    """``None``, ``Sign`` or ``SignAndEncrypt``."""
    username: str | None = None
    password: SecretStr | None = None
    certificate: str | None = None
    """The client's certificate (PEM or DER file) for a secured endpoint; its subjectAltName must hold the client's
    application URI (``URI:urn:pumpops:client``), which the source then presents."""
    private_key: str | None = None
    """The client's private key (PEM or DER file, unencrypted RSA) for a secured endpoint."""
    server_certificate: str | None = None
    """The server's certificate (PEM or DER file) to pin: a server that presents another is refused. None takes the
    one the server's endpoint list offers (trust on each connect)."""
    user_certificate: str | None = None
    """Sign in with an X.509 user certificate (PEM or DER file) instead of Username/Password: the session's user
    is who the server maps this certificate to. Any certificate the server accepts for a user, not necessarily
    the application's own ``Certificate``."""
    user_private_key: str | None = None
    """The key of ``UserCertificate`` (PEM or DER file, unencrypted RSA): it signs the sign-in."""
    sampling_interval_ms: int = Field(default=1000, ge=10, le=3_600_000)
    nodes: tuple[OpcUaNode, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _source_name(value)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        if not value.startswith("opc.tcp://"):
            raise ValueError(f"{value!r} is not an OPC UA endpoint; write it like 'opc.tcp://10.0.0.5:4840'")
        return value

    @field_validator("security_policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        known = ("None", "Basic256Sha256", "Aes128Sha256RsaOaep", "Aes256Sha256RsaPss")
        if value not in known:
            raise ValueError(f"unknown security policy {value!r}; use one of {', '.join(known)}")
        return value

    @field_validator("security_mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        known = ("None", "Sign", "SignAndEncrypt")
        if value not in known:
            raise ValueError(f"unknown security mode {value!r}; use one of {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _secured_needs_certificate(self) -> OpcUaSourceSettings:
        secured = self.security_policy != "None" or self.security_mode != "None"
        if secured and (self.security_policy == "None" or self.security_mode == "None"):
            raise ValueError("SecurityPolicy and SecurityMode must both be None, or both be set")
        if secured and (self.certificate is None or self.private_key is None):
            raise ValueError(f"source {self.name!r}: a secured endpoint needs Certificate and PrivateKey files")
        if (self.user_certificate is None) != (self.user_private_key is None):
            raise ValueError(f"source {self.name!r}: UserCertificate and UserPrivateKey go together; set both, or none")
        if self.user_certificate is not None and (self.username is not None or self.password is not None):
            raise ValueError(
                f"source {self.name!r}: sign in with Username/Password or with UserCertificate/UserPrivateKey, not both"
            )
        return self


class MqttSourceSettings(Section):
    """An MQTT broker to subscribe to (QoS 1); the topic names the pump and the sensor type."""

    model_config = ConfigDict(alias_generator=alias)
    name: str
    host: str = "127.0.0.1"
    port: int = Field(default=1883, ge=1, le=65535)
    tls: bool = False
    ca_file: str | None = None
    """A CA bundle (PEM) to verify the broker with; None uses the system's."""
    username: str | None = None
    password: SecretStr | None = None
    topic: str = "+/+/+/{pump}/{sensor}"
    """A topic pattern in the Unified Namespace style: MQTT wildcards plus exactly one ``{pump}`` and one
    ``{sensor}`` level, e.g. ``acme/north/station1/{pump}/{sensor}``."""
    client_id: str | None = None
    persistent_session: bool = False
    """Keep the MQTT session across reconnects (``clean_session`` false, under the stable client id): a broker that
    keeps sessions (mosquitto, EMQX, HiveMQ) queues the QoS-1 values published while the connection is down and
    delivers them on reconnect. Off: those values are lost."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _source_name(value)

    @field_validator("topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        levels = value.split("/")
        if levels.count("{pump}") != 1 or levels.count("{sensor}") != 1:
            raise ValueError(
                f"topic {value!r} must hold exactly one '{{pump}}' level and one '{{sensor}}' level, "
                "e.g. 'acme/north/station1/{pump}/{sensor}'"
            )
        if "#" in levels:
            raise ValueError(f"topic {value!r}: use '+' for a level the pattern ignores, not '#'")
        return value


class TelemetrySettings(Section):
    """Live values from the plant: where they come from, how they are written, when a value counts as stale."""

    model_config = ConfigDict(alias_generator=alias)
    stale_after_seconds: float | None = Field(default=None, gt=0)
    """A reading older than this is marked ``stale`` in every tool result that shows it; None marks none."""
    batch_size: int = Field(default=500, ge=1, le=100_000)
    flush_seconds: float = Field(default=1.0, gt=0, le=3600)
    reconnect_min_seconds: float = Field(default=1.0, gt=0, le=3600)
    reconnect_max_seconds: float = Field(default=60.0, gt=0, le=86_400)
    mqtt: tuple[MqttSourceSettings, ...] = ()
    opc_ua: tuple[OpcUaSourceSettings, ...] = ()

    @model_validator(mode="after")
    def _unique_names(self) -> TelemetrySettings:
        names = [s.name for s in self.mqtt] + [s.name for s in self.opc_ua]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"telemetry source names must be unique; repeated: {', '.join(repeated)}")
        return self


class AlarmSettings(Section):
    """Alarms raised from telemetry: how long beyond the threshold, the deadband, and the severity levels."""

    model_config = ConfigDict(alias_generator=alias)
    raise_after_seconds: float = Field(default=30.0, ge=0, le=86_400)
    """A value must stay beyond its sensor's alarm threshold this long before an alarm is raised."""
    clear_after_seconds: float = Field(default=60.0, ge=0, le=86_400)
    """An alarm clears once the value has stayed back inside (threshold minus the deadband) this long."""
    deadband_percent: float = Field(default=5.0, ge=0, le=50)
    """How far, in percent of the threshold, a value must come back inside before it counts as inside."""
    levels: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Severity levels per sensor type for all but vibration (whose severity is its ISO 10816-3 zone), e.g.
    ``{"bearing_temperature": {"high": 90, "critical": 100}}``; beyond the threshold but below every level is
    ``medium``."""

    @field_validator("levels")
    @classmethod
    def _known_levels(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for sensor, levels in value.items():
            _sensor_type(sensor)
            unknown = sorted(set(levels) - set(SEVERITIES))
            if unknown:
                raise ValueError(f"unknown severity {unknown[0]!r} for {sensor}; use {', '.join(SEVERITIES)}")
        return value


class TriageSettings(Section):
    """Automatic triage of each new alarm, and where the results go."""

    model_config = ConfigDict(alias_generator=alias)
    automatic: bool = True
    """`pumpops telemetry` triages each new alarm (from telemetry or an import) with the agent."""
    max_per_minute: int = Field(default=6, ge=1, le=10_000)
    """More new alarms than this in a minute are triaged together as one fleet-level triage."""
    poll_seconds: float = Field(default=2.0, gt=0, le=3600)
    file: str | None = "data/triage.jsonl"
    """A JSON Lines file each triage result is appended to; None writes none."""
    stdout: bool = False
    mqtt_source: str | None = None
    """The `Telemetry.Mqtt` source whose broker receives triage results on `MqttTopic`."""
    mqtt_topic: str | None = None
    webhook_url: str | None = None
    """An http(s) URL each triage result is POSTed to as JSON."""
    webhook_attempts: int = Field(default=4, ge=1, le=100)
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=600)

    @model_validator(mode="after")
    def _mqtt_pair(self) -> TriageSettings:
        if (self.mqtt_source is None) != (self.mqtt_topic is None):
            raise ValueError("MqttSource and MqttTopic go together: name both or neither")
        if self.mqtt_topic is not None and any(c in self.mqtt_topic for c in "+#"):
            raise ValueError(f"MqttTopic {self.mqtt_topic!r} is a topic to publish to; it cannot hold '+' or '#'")
        if self.webhook_url is not None and not self.webhook_url.startswith(("http://", "https://")):
            raise ValueError(f"WebhookUrl {self.webhook_url!r} must be an http:// or https:// URL")
        return self


def _sensor_type(value: Any) -> str:
    if value not in SENSOR_TYPES:
        raise ValueError(f"unknown sensor type {value!r}; use one of {', '.join(SENSOR_TYPES)}")
    return str(value)


def _source_name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(f"source name {value!r} must be 1-64 letters, digits, '_', '.' or '-', e.g. 'station1-plc'")
    return value
