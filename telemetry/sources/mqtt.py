"""An MQTT broker as a live source: subscribe to the configured topic pattern (QoS 1), read each message.

Read-only: this client subscribes and never publishes (no will message either). The topic and payload shape are
in `telemetry.sources.mqtt_payload`.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable

import aiomqtt

from kernel_setup.plant_settings import MqttSourceSettings
from telemetry.sources.base import ReadingSink, ReconnectingSource, SourceFailure
from telemetry.sources.mqtt_payload import MalformedMessage, TopicPattern, parse_payload

QOS = 1
KEEPALIVE_SECONDS = 30
# A clean session on every connect unless the source's `PersistentSession` asks to keep it, always under a stable
# client id. A kept session lets a broker queue QoS-1 values while the connection is down and deliver them after
# the reconnect; its redeliveries are harmless, since the store keys readings by (sensor, timestamp) and drops a
# second copy. It is not the default: amqtt 0.12 (the broker the tests and the simulator run in-process) resumes a
# kept session without delivering what it queued, and a broker that keeps sessions for a client id nobody uses any
# more holds their messages. With a clean session the values published while the connection is down are lost; the
# next values follow within a sampling interval, and alarms need a value to stay beyond its threshold.


class MqttSource(ReconnectingSource):
    """Readings from one MQTT broker, by the source's topic pattern."""

    kind = "mqtt"
    _failures = (*ReconnectingSource._failures, aiomqtt.MqttError)

    def __init__(self, settings: MqttSourceSettings, *, reconnect_min: float, reconnect_max: float) -> None:
        super().__init__(settings.name, reconnect_min=reconnect_min, reconnect_max=reconnect_max)
        self._settings = settings
        self._pattern = TopicPattern(settings.topic)
        # A stable id: the broker's logs and ACLs see the same client across reconnects.
        self._client_id = settings.client_id or f"pumpops-{settings.name}"
        self._tls: ssl.SSLContext | None = None

    @property
    def subscription(self) -> str:
        """The MQTT filter this source subscribes to."""
        return self._pattern.subscription

    async def _stream(self, sink: ReadingSink, connected: Callable[[], Awaitable[None]]) -> None:
        settings = self._settings
        if settings.tls and self._tls is None:
            # Reads the CA bundle (or the system's): file IO, so off the event loop.
            self._tls = await asyncio.to_thread(ssl.create_default_context, cafile=settings.ca_file)
        client = aiomqtt.Client(
            settings.host,
            settings.port,
            username=settings.username,
            password=settings.password.get_secret_value() if settings.password else None,
            identifier=self._client_id,
            clean_session=not settings.persistent_session,
            keepalive=KEEPALIVE_SECONDS,
            tls_context=self._tls,
        )
        async with client:
            await client.subscribe(self._pattern.subscription, qos=QOS)
            await connected()
            async for message in client.messages:
                try:
                    pump, sensor = self._pattern.parse(str(message.topic))
                    if not isinstance(message.payload, bytes | str):
                        raise MalformedMessage("not_json", "the payload is not JSON")
                    reading = parse_payload(message.payload, pump, sensor, self.name)
                except MalformedMessage as exc:
                    self._malformed(exc.reason, str(exc))
                    continue
                await self._deliver(sink, reading)
        raise SourceFailure("the broker closed the connection")
