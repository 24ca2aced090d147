"""An OPC UA server as a live source: one subscription, one monitored item per configured node.

Read-only: the client only uses the services that read (GetEndpoints, CreateSession/ActivateSession, Read,
Browse, CreateSubscription, CreateMonitoredItems, Publish and the closing ones). It never writes a value, calls
a method, or adds or deletes nodes or references; tests/telemetry/test_opcua_source.py records every request a
real server receives to prove it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from asyncua import Client, Node, ua
from asyncua.common.subscription import DataChangeNotif

from core.errors import sentence
from kernel_setup.plant_settings import OpcUaNode, OpcUaSourceSettings
from telemetry.sources.base import ReadingSink, ReconnectingSource, SourceFailure
from telemetry.sources.opcua_security import load_security, load_user_identity, no_endpoint, secure
from twin.identifiers import PUMP, canonical_record_id
from twin.models import SensorType
from twin.readings import Reading

logger = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 10.0
WATCHDOG_SECONDS = 1.0


# The server refused the session's user (asyncua raises these from ActivateSession).
_SIGN_IN_REFUSED = (
    ua.uaerrors.BadUserAccessDenied,
    ua.uaerrors.BadIdentityTokenRejected,
    ua.uaerrors.BadIdentityTokenInvalid,
)


def _sign_in_hint(settings: OpcUaSourceSettings) -> str:
    """What to check when the server refuses the sign-in, by how the source signs in (never a secret)."""
    if settings.user_certificate is not None:
        return (
            f"The server refused UserCertificate {settings.user_certificate!r}: it must map that certificate to a "
            "user allowed to read these nodes."
        )
    if settings.username is not None:
        return f"The server refused user {settings.username!r}: check Username and Password."
    return "The server admits no anonymous session: set Username/Password or UserCertificate/UserPrivateKey."


class OpcUaSource(ReconnectingSource):
    """Readings from one OPC UA server, by the source's node map."""

    kind = "opcua"
    _failures = (*ReconnectingSource._failures, ConnectionError, ua.UaError)

    def __init__(self, settings: OpcUaSourceSettings, *, reconnect_min: float, reconnect_max: float) -> None:
        """Build the source; a secured one reads its certificate files now.

        Raises:
            OpcUaSecurityError: A certificate or key file is missing, unreadable, or not what its setting needs.
        """
        super().__init__(settings.name, reconnect_min=reconnect_min, reconnect_max=reconnect_max)
        self._settings = settings
        self._security = load_security(settings)
        self._user = load_user_identity(settings)
        self._logged_timestamp = False

    async def _stream(self, sink: ReadingSink, connected: Callable[[], Awaitable[None]]) -> None:
        settings = self._settings
        client = Client(settings.endpoint, timeout=REQUEST_TIMEOUT_SECONDS, watchdog_intervall=WATCHDOG_SECONDS)
        if settings.username is not None:
            client.set_user(settings.username)
        if settings.password is not None:
            client.set_password(settings.password.get_secret_value())
        if self._user is not None:  # asyncua then signs in with an X509IdentityToken signed by the key
            client.user_certificate = self._user.certificate
            client.user_private_key = self._user.private_key
        if self._security is not None:
            await secure(client, settings, self._security)
        lost = asyncio.Event()
        lost_reason: list[str] = []

        async def on_lost(exc: Exception) -> None:
            lost_reason.append(str(exc) or type(exc).__name__)
            lost.set()

        client.connection_lost_callback = on_lost
        handler = _Handler(self, sink, lost, lost_reason)
        try:
            await client.connect()
        except _SIGN_IN_REFUSED as exc:
            raise SourceFailure(f"{sentence(str(exc))} {_sign_in_hint(settings)}") from None
        except ua.UaError as exc:
            if not str(exc).startswith("No matching endpoints"):
                raise
            # An unsecured source meeting a server that offers only secured endpoints (asyncua's wording is cryptic).
            raise SourceFailure(no_endpoint(settings, await _endpoints(client))) from None
        try:
            subscription = await client.create_subscription(float(settings.sampling_interval_ms), handler)
            nodes = [client.get_node(node.node_id) for node in settings.nodes]
            handler.nodes = {node.nodeid: spec for node, spec in zip(nodes, settings.nodes, strict=True)}
            refused: list[str] = []
            if nodes:
                results = await subscription.create_monitored_items(
                    _item(node, handle, settings.sampling_interval_ms) for handle, node in enumerate(nodes, 1)
                )
                refused = [
                    f"{spec.node_id} ({result.name})"
                    for spec, result in zip(settings.nodes, results if isinstance(results, list) else [], strict=False)
                    if isinstance(result, ua.StatusCode)
                ]
                if refused:
                    logger.warning("opcua source %r: the server refused nodes %s", self.name, ", ".join(refused))
            self._refused(refused)
            await connected()
            await lost.wait()
            raise SourceFailure(f"connection lost: {lost_reason[0] if lost_reason else 'unknown'}")
        finally:
            await _close_quietly(client)

    def _reading(self, spec: OpcUaNode, value: ua.DataValue) -> Reading | None:
        """The reading a data change holds, or None (counted as malformed) for a bad or non-numeric value."""
        status = value.StatusCode
        if status is not None and not status.is_good():
            self._malformed("bad_status", f"node {spec.node_id} reported {status.name}")
            return None
        raw = value.Value.Value if value.Value is not None else None
        if not isinstance(raw, int | float) or isinstance(raw, bool) or not math.isfinite(raw):
            self._malformed("value", f"node {spec.node_id} holds {raw!r}, not a finite number")
            return None
        at: datetime | None = value.SourceTimestamp or value.ServerTimestamp
        if at is None:
            at = datetime.now(UTC)
            if not self._logged_timestamp:
                self._logged_timestamp = True
                logger.warning("opcua source %r: node %s sends no timestamps; using arrival", self.name, spec.node_id)
        elif at.tzinfo is None:
            at = at.replace(tzinfo=UTC)  # OPC UA times are UTC
        pump = canonical_record_id(spec.pump, PUMP) or spec.pump.strip().upper()
        return Reading(pump_id=pump, sensor_type=SensorType(spec.sensor), value=float(raw), at=at, source=self.name)


class _Handler:
    """asyncua's subscription callbacks, turned into readings and a lost-connection signal."""

    def __init__(self, source: OpcUaSource, sink: ReadingSink, lost: asyncio.Event, reason: list[str]) -> None:
        self._source = source
        self._sink = sink
        self._lost = lost
        self._reason = reason
        self.nodes: dict[ua.NodeId, OpcUaNode] = {}

    async def datachange_notification(self, node: Node, val: Any, data: DataChangeNotif) -> None:
        spec = self.nodes.get(node.nodeid)
        if spec is None:
            return
        reading = self._source._reading(spec, data.monitored_item.Value)
        if reading is not None:
            await self._source._deliver(self._sink, reading)

    async def status_change_notification(self, status: ua.StatusChangeNotification) -> None:
        if status.Status is not None and not status.Status.is_good():
            self._reason.append(f"subscription status {status.Status.name}")
            self._lost.set()


async def _endpoints(client: Client) -> list[ua.EndpointDescription]:
    """The server's endpoints, or none when it cannot be asked (only to say what it offers)."""
    try:
        return await asyncio.wait_for(client.connect_and_get_server_endpoints(), timeout=REQUEST_TIMEOUT_SECONDS)
    except (TimeoutError, OSError, ConnectionError, ua.UaError):
        return []


async def _close_quietly(client: Client) -> None:
    """Close the session and socket; on a connection already gone this only tidies up."""
    try:
        await asyncio.wait_for(client.disconnect(), timeout=2.0)
    except (TimeoutError, OSError, ConnectionError, ua.UaError):
        client.disconnect_socket()


def _item(node: Node, handle: int, sampling_interval_ms: int | float) -> ua.MonitoredItemCreateRequest:
    """A monitored item that reports a new source timestamp even when the value repeats.

    A value that stays beyond its threshold is still a new reading each time the server stamps it: the alarm rules
    measure how long a value has been beyond from these readings, so a repeat must arrive, not be filtered out as
    "no change" (the default trigger, StatusValue, would).
    """
    item = ua.ReadValueId()
    item.NodeId = node.nodeid
    item.AttributeId = ua.AttributeIds.Value
    parameters = ua.MonitoringParameters()
    parameters.ClientHandle = handle
    parameters.SamplingInterval = ua.Double(sampling_interval_ms)
    parameters.QueueSize = 0
    parameters.DiscardOldest = True
    data_change = ua.DataChangeFilter()
    data_change.Trigger = ua.DataChangeTrigger.StatusValueTimestamp
    parameters.Filter = data_change
    request = ua.MonitoredItemCreateRequest()
    request.ItemToMonitor = item
    request.MonitoringMode = ua.MonitoringMode.Reporting
    request.RequestedParameters = parameters
    return request
