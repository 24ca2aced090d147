"""Where triage reports go: a JSON Lines file, stdout, an MQTT topic, a webhook.

Rules:

- A sink gets each report after it is stored; a failing sink raises `SinkError`, which the dispatcher logs and
  records on the stored row (``result.undelivered``). A sink never loses the stored record.
- `MqttSink` is the only place PumpOps publishes to MQTT: one topic (`Triage.MqttTopic`), QoS 1, on the broker of
  the `Telemetry.Mqtt` source named by `Triage.MqttSource`, under its own client id (never the source's, which
  the broker would disconnect).
- `WebhookSink` retries a connection error, a timeout, 429 and 5xx answers with doubling waits, up to
  `Triage.WebhookAttempts` attempts in all; any other 4xx answer fails at once (retrying cannot fix it).
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
from pathlib import Path
from typing import Protocol, TextIO

import aiomqtt
import httpx

from core.errors import PumpOpsError
from doors.auto_triage.records import TriageReport
from kernel_setup.plant_settings import MqttSourceSettings

MQTT_TIMEOUT_SECONDS = 10.0
MAX_BACKOFF_SECONDS = 30.0


class SinkError(PumpOpsError):
    """A sink could not take a report; the message says which sink and why."""


class Sink(Protocol):
    """Takes each stored triage report."""

    @property
    def name(self) -> str:
        """What the sink is, for logs and ``result.undelivered`` (e.g. ``webhook``)."""
        ...

    async def deliver(self, report: TriageReport) -> None:
        """Deliver one report.

        Raises:
            SinkError: it could not be delivered.
        """
        ...


def report_json(report: TriageReport) -> str:
    """The report as one line of compact JSON (what every sink sends)."""
    return json.dumps(report.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)


class FileSink:
    """Appends one JSON object per line to a file, creating its folder."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        """``file``."""
        return "file"

    async def deliver(self, report: TriageReport) -> None:
        """Append the report as one line."""
        line = report_json(report) + "\n"
        async with self._lock:
            try:
                await asyncio.to_thread(self._append, line)
            except OSError as exc:
                raise SinkError(f"file sink: cannot append to {self._path.name}: {exc.strerror or exc}") from exc

    def _append(self, line: str) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._path.open("a", encoding="utf-8") as handle:
            handle.write(line)


class StdoutSink:
    """Prints one JSON object per line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    @property
    def name(self) -> str:
        """``stdout``."""
        return "stdout"

    async def deliver(self, report: TriageReport) -> None:
        """Print the report as one line."""
        stream = self._stream if self._stream is not None else sys.stdout
        try:
            stream.write(report_json(report) + "\n")
            stream.flush()
        except OSError as exc:
            raise SinkError(f"stdout sink: {exc}") from exc


class MqttSink:
    """Publishes each report to one topic (QoS 1) on a telemetry source's broker."""

    def __init__(self, source: MqttSourceSettings, topic: str, *, timeout_seconds: float = MQTT_TIMEOUT_SECONDS):
        self._source = source
        self._topic = topic
        self._timeout = timeout_seconds

    @property
    def name(self) -> str:
        """``mqtt``."""
        return "mqtt"

    async def deliver(self, report: TriageReport) -> None:
        """Connect, publish the report to the topic with QoS 1, disconnect."""
        source = self._source
        password = source.password.get_secret_value() if source.password is not None else None
        identifier = f"{source.client_id}-triage" if source.client_id else None
        try:
            async with asyncio.timeout(self._timeout):
                async with aiomqtt.Client(
                    source.host,
                    source.port,
                    username=source.username,
                    password=password,
                    identifier=identifier,
                    tls_context=_tls_context(source),
                ) as client:
                    await client.publish(self._topic, report_json(report).encode(), qos=1)
        except TimeoutError as exc:
            problem = f"the broker of source {source.name!r} did not answer in {self._timeout:g} s"
            raise SinkError(f"mqtt sink: {problem}") from exc
        except (aiomqtt.MqttError, OSError, ssl.SSLError) as exc:
            raise SinkError(f"mqtt sink: cannot publish to broker of source {source.name!r}: {exc}") from exc


def _tls_context(source: MqttSourceSettings) -> ssl.SSLContext | None:
    if not source.tls:
        return None
    return ssl.create_default_context(cafile=source.ca_file)


class WebhookSink:
    """POSTs each report as JSON to a URL, retrying with doubling waits."""

    def __init__(
        self,
        url: str,
        *,
        attempts: int,
        timeout_seconds: float,
        backoff_seconds: float = 1.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._url = url
        self._attempts = attempts
        self._timeout = timeout_seconds
        self._backoff = backoff_seconds
        self._transport = transport

    @property
    def name(self) -> str:
        """``webhook``."""
        return "webhook"

    async def deliver(self, report: TriageReport) -> None:
        """POST the report; retry what a retry can fix.

        Raises:
            SinkError: every attempt failed, or the receiver refused the report (a 4xx other than 429).
        """
        body = report_json(report).encode()
        headers = {"content-type": "application/json"}
        problem = "no attempt made"
        async with httpx.AsyncClient(timeout=self._timeout, transport=self._transport) as client:
            for attempt in range(self._attempts):
                if attempt:
                    await asyncio.sleep(min(MAX_BACKOFF_SECONDS, self._backoff * 2 ** (attempt - 1)))
                try:
                    response = await client.post(self._url, content=body, headers=headers)
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    continue
                if response.is_success:
                    return
                problem = f"HTTP {response.status_code}"
                if response.status_code != 429 and response.status_code < 500:
                    raise SinkError(f"webhook sink: the receiver refused the report ({problem})")
        raise SinkError(f"webhook sink: {self._attempts} attempt(s) failed; last: {problem}")
