"""The dispatcher: finds new alarms, triages them within the per-minute budget, stores and delivers the results.

Rules (the stored side is described in `doors.auto_triage.records`):

- Budget: at most `Triage.MaxPerMinute` alarms are triaged one by one in any sliding minute, most severe and
  oldest first. The pending alarms beyond that (a flood) go into ONE fleet-level turn, at most one such turn per
  sliding minute and at most `fleet.MAX_BATCH` alarms in it; each is recorded ``batched`` with the batch id.
  What neither budget can take stays pending for a later poll: nothing is lost.
- An alarm that cleared before its turn came is recorded ``skipped`` (`CLEARED_BEFORE`) and costs no budget.
- A turn that fails (the model service failed, or the turn ended without an answer) records ``failed`` with the
  reason. The alarm is tried once more on a later poll (budget permitting); a second failure is final. Only a
  final failure is delivered to the sinks.
- A triage never executes a write: the turn runs as ``automation:triage``, and the approval filter parks every
  write it proposes; the parked approval ids are in the report.
- The record is stored before any sink sees it; a sink that fails is logged and named in ``result.undelivered``.
- One `AutoTriage.run` per database: it holds the database's triage lease (`doors.auto_triage.lease`); a second
  one is refused, since two would each triage the same new alarm.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence

from doors.auto_triage.budget import SlidingBudget
from doors.auto_triage.fleet import MAX_BATCH, fleet_prompt, new_batch_id
from doors.auto_triage.lease import TriageLease
from doors.auto_triage.records import (
    CLEARED_BEFORE,
    MAX_ATTEMPTS,
    Evidence,
    Pending,
    TriageLog,
    TriageRecord,
    TriageReport,
    TriageStatus,
    now_text,
)
from doors.auto_triage.sinks import FileSink, MqttSink, Sink, SinkError, StdoutSink, WebhookSink
from doors.triage import AUTOMATION, UnknownAlarmError, parse_urgency, triage_alarm
from kernel_setup.app import AppContext
from kernel_setup.errors import SettingsError
from kernel_setup.plant_settings import MqttSourceSettings, TriageSettings
from turn.errors import ChatServiceError
from turn.events import TurnFinished, TurnResult
from turn.factory import runner_for
from twin.alarms import Alarm

logger = logging.getLogger(__name__)

BATCHES_PER_MINUTE = 1
MAX_SUMMARY = 300


class AutoTriage:
    """Triages each newly raised alarm (from telemetry or an import) and delivers the result to the sinks."""

    def __init__(
        self,
        app: AppContext,
        settings: TriageSettings,
        *,
        mqtt: MqttSourceSettings | None = None,
        sinks: Sequence[Sink] | None = None,
        webhook_backoff_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        on_record: Callable[[TriageRecord], None] | None = None,
    ) -> None:
        """Set up the dispatcher; nothing runs until `run` or `run_once`.

        Args:
            app: An open app; triage turns run on its kernel and model.
            settings: The `Triage` section (budget, poll interval, sinks).
            mqtt: The broker for `Triage.MqttTopic`; None looks up the `Telemetry.Mqtt` source that
                `Triage.MqttSource` names in ``app.settings``.
            sinks: Replaces the sinks the settings configure (an integrator's own).
            webhook_backoff_seconds: The first wait between webhook attempts; it doubles each time (at most 30 s).
            clock: Monotonic seconds for the per-minute budget (tests pass their own).
            on_record: Called with each record once it is stored and delivered (e.g. to show progress).

        Raises:
            SettingsError: `Triage.MqttSource` names no configured MQTT source.
        """
        self._app = app
        self._settings = settings
        self._log = TriageLog(app.db)
        self._singles = SlidingBudget(settings.max_per_minute, clock=clock)
        self._batches = SlidingBudget(BATCHES_PER_MINUTE, clock=clock)
        self._baselined = False
        self._on_record = on_record
        if sinks is not None:
            self._sinks = list(sinks)
        else:
            self._sinks = self._configured_sinks(mqtt, webhook_backoff_seconds)

    @property
    def sinks(self) -> list[Sink]:
        """The sinks each report goes to, in order."""
        return list(self._sinks)

    async def run(self) -> None:
        """Poll for new alarms every `Triage.PollSeconds` until cancelled, holding the database's triage lease.

        Raises:
            TriageAlreadyRunning: another process runs automatic triage on this database.
        """
        lease = TriageLease(self._app.settings.database_target)
        await lease.acquire()
        try:
            while True:
                try:
                    await self.run_once()
                except Exception:
                    # The loop's boundary: a failed poll (e.g. a locked database) is logged and the next poll retries.
                    logger.exception(
                        "automatic triage: a poll failed; trying again in %g s", self._settings.poll_seconds
                    )
                await asyncio.sleep(self._settings.poll_seconds)
        finally:
            await lease.release()

    async def run_once(self) -> list[TriageRecord]:
        """Handle what is pending now; return the records written (the first-run baseline included)."""
        records: list[TriageRecord] = []
        if not self._baselined:
            records.extend(self._noted(await self._log.baseline()))
            self._baselined = True
        pending = await self._log.pending()
        cleared = [p for p in pending if not p.alarm.active]
        if cleared:
            records.extend(self._noted(await self._skip_cleared(cleared)))
        active = [p for p in pending if p.alarm.active]
        singles = active[: self._singles.left()]
        for item in singles:
            self._singles.spend()
            records.extend(self._noted(await self._triage_one(item)))
        flood = active[len(singles) :][:MAX_BATCH]
        if flood and self._batches.left():
            self._batches.spend()
            records.extend(self._noted(await self._triage_batch(flood)))
        return records

    def _noted(self, records: list[TriageRecord]) -> list[TriageRecord]:
        if self._on_record is not None:
            for record in records:
                self._on_record(record)
        return records

    async def _skip_cleared(self, cleared: list[Pending]) -> list[TriageRecord]:
        at = now_text()
        records = [
            TriageRecord(
                alarm_id=p.alarm.alarm_id,
                status=TriageStatus.SKIPPED,
                reason=CLEARED_BEFORE,
                urgency=None,
                batch_id=None,
                result=None,
                recorded_at=at,
            )
            for p in cleared
        ]
        await self._log.write(records)
        return records

    async def _triage_one(self, item: Pending) -> list[TriageRecord]:
        alarm = item.alarm
        try:
            result = await triage_alarm(self._app, alarm.alarm_id)
        except UnknownAlarmError:
            return []  # deleted since it was read: there is no alarm left to record against
        except (ChatServiceError, TimeoutError) as exc:
            return await self._failed([item], str(exc) or type(exc).__name__, batch_id=None)
        if not result.turn.answer.strip():
            return await self._failed([item], _no_answer(result.turn), batch_id=None)
        report = _report(
            TriageStatus.TRIAGED, [alarm], result.turn, batch_id=None, single=True, attempts=item.attempts + 1
        )
        return await self._finish([(alarm, report)], report)

    async def _triage_batch(self, flood: list[Pending]) -> list[TriageRecord]:
        alarms = [p.alarm for p in flood]
        batch_id = new_batch_id()
        try:
            turn = await self._fleet_turn(alarms)
        except (ChatServiceError, TimeoutError) as exc:
            return await self._failed(flood, str(exc) or type(exc).__name__, batch_id=batch_id)
        if not turn.answer.strip():
            return await self._failed(flood, _no_answer(turn), batch_id=batch_id)
        report = _report(TriageStatus.BATCHED, alarms, turn, batch_id=batch_id, single=False, attempts=1)
        rows = [(p.alarm, report.model_copy(update={"attempts": p.attempts + 1})) for p in flood]
        return await self._finish(rows, report)

    async def _fleet_turn(self, alarms: list[Alarm]) -> TurnResult:
        result: TurnResult | None = None
        runner = runner_for(self._app)
        async for event in runner.stream(fleet_prompt(alarms), principal=AUTOMATION):
            if isinstance(event, TurnFinished):
                result = event.result
        assert result is not None  # the runner always ends with TurnFinished
        return result

    async def _failed(self, items: list[Pending], problem: str, *, batch_id: str | None) -> list[TriageRecord]:
        at = now_text()
        rows: list[tuple[Alarm, TriageReport]] = []
        final: list[Alarm] = []
        for item in items:
            attempts = item.attempts + 1
            last = attempts >= MAX_ATTEMPTS
            then = "failed for good" if last else "tried once more on the next poll"
            report = TriageReport(
                status=TriageStatus.FAILED,
                alarm_id=item.alarm.alarm_id,
                pump_id=item.alarm.pump_id,
                alarm_ids=[p.alarm.alarm_id for p in items],
                pump_ids=_unique(p.alarm.pump_id for p in items),
                batch_id=batch_id,
                reason=f"{problem} (attempt {attempts} of {MAX_ATTEMPTS}; {then})",
                attempts=attempts,
                recorded_at=at,
            )
            rows.append((item.alarm, report))
            if last:
                final.append(item.alarm)
        delivered = None
        if final:
            delivered = TriageReport(
                status=TriageStatus.FAILED,
                alarm_id=final[0].alarm_id if len(final) == 1 else None,
                pump_id=final[0].pump_id if len(final) == 1 else None,
                alarm_ids=[a.alarm_id for a in final],
                pump_ids=_unique(a.pump_id for a in final),
                batch_id=batch_id,
                reason=f"{problem} (attempt {MAX_ATTEMPTS} of {MAX_ATTEMPTS}; failed for good)",
                attempts=MAX_ATTEMPTS,
                recorded_at=at,
            )
        return await self._finish(rows, delivered)

    async def _finish(
        self, rows: list[tuple[Alarm, TriageReport]], delivered: TriageReport | None
    ) -> list[TriageRecord]:
        """Store one record per alarm, then deliver ``delivered``; name the sinks that failed on the records."""
        records = [_record(report.for_alarm(alarm)) for alarm, report in rows]
        await self._log.write(records)
        if delivered is None:
            return records
        undelivered = await self._deliver(delivered)
        if undelivered:
            records = [_record(r.result.model_copy(update={"undelivered": undelivered})) for r in records if r.result]
            await self._log.write(records)
        return records

    async def _deliver(self, report: TriageReport) -> list[str]:
        """Give ``report`` to every sink at once; return ``"<sink>: <why>"`` for each that failed."""
        outcomes = await asyncio.gather(*(sink.deliver(report) for sink in self._sinks), return_exceptions=True)
        failures: list[str] = []
        for sink, outcome in zip(self._sinks, outcomes, strict=True):
            if isinstance(outcome, SinkError):
                logger.warning("automatic triage: %s", outcome)
                failures.append(f"{sink.name}: {outcome}")
            elif isinstance(outcome, BaseException):
                if not isinstance(outcome, Exception):
                    raise outcome  # cancellation and exits are not sink failures
                logger.error("automatic triage: the %s sink failed unexpectedly", sink.name, exc_info=outcome)
                failures.append(f"{sink.name}: unexpected {type(outcome).__name__}")
        return failures

    def _configured_sinks(self, mqtt: MqttSourceSettings | None, backoff: float) -> list[Sink]:
        settings = self._settings
        sinks: list[Sink] = []
        if settings.file is not None:
            sinks.append(FileSink(self._app.settings.resolve(settings.file)))
        if settings.stdout:
            sinks.append(StdoutSink())
        if settings.mqtt_topic is not None:
            source = mqtt or _mqtt_source(self._app, settings.mqtt_source)
            sinks.append(MqttSink(source, settings.mqtt_topic))
        if settings.webhook_url is not None:
            sinks.append(
                WebhookSink(
                    settings.webhook_url,
                    attempts=settings.webhook_attempts,
                    timeout_seconds=settings.webhook_timeout_seconds,
                    backoff_seconds=backoff,
                )
            )
        return sinks


def _mqtt_source(app: AppContext, name: str | None) -> MqttSourceSettings:
    for source in app.settings.telemetry.mqtt:
        if source.name == name:
            return source
    names = ", ".join(s.name for s in app.settings.telemetry.mqtt) or "none"
    raise SettingsError(f"Triage.MqttSource {name!r} names no Telemetry.Mqtt source; configured: {names}")


def _report(
    status: TriageStatus, alarms: list[Alarm], turn: TurnResult, *, batch_id: str | None, single: bool, attempts: int
) -> TriageReport:
    approvals = _unique(c.approval_id for c in turn.tool_calls if c.status == "pending_approval" and c.approval_id)
    return TriageReport(
        status=status,
        alarm_id=alarms[0].alarm_id if single else None,
        pump_id=alarms[0].pump_id if single else None,
        alarm_ids=[a.alarm_id for a in alarms],
        pump_ids=_unique(a.pump_id for a in alarms),
        urgency=parse_urgency(turn.answer),
        answer=turn.answer,
        evidence=[
            Evidence(
                name=c.name,
                arguments=c.arguments,
                status=c.status,
                summary=c.summary[:MAX_SUMMARY],
                approval_id=c.approval_id,
            )
            for c in turn.tool_calls
        ],
        approval_ids=approvals,
        batch_id=batch_id,
        attempts=attempts,
        recorded_at=now_text(),
    )


def _record(report: TriageReport) -> TriageRecord:
    assert report.alarm_id is not None  # a stored report names its alarm (`TriageReport.for_alarm`)
    return TriageRecord(
        alarm_id=report.alarm_id,
        status=report.status,
        reason=report.reason,
        urgency=report.urgency,
        batch_id=report.batch_id,
        result=report,
        recorded_at=report.recorded_at,
    )


def _unique(values: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v is not None))


def _no_answer(turn: TurnResult) -> str:
    return f"the turn ended without an answer ({turn.reason or 'no reason given'})"
