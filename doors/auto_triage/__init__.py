"""Automatic triage: each newly raised alarm is triaged by the agent, stored in `alarm_triage` and delivered.

``AutoTriage(app, settings.triage).run()`` polls until cancelled; ``run_once()`` handles what is pending now.
"""

from doors.auto_triage.dispatcher import AutoTriage
from doors.auto_triage.lease import TriageAlreadyRunning, TriageLease
from doors.auto_triage.records import (
    CLEARED_BEFORE,
    EXISTED_BEFORE,
    MAX_ATTEMPTS,
    Evidence,
    TriageLog,
    TriageRecord,
    TriageReport,
    TriageStatus,
)
from doors.auto_triage.sinks import FileSink, MqttSink, Sink, SinkError, StdoutSink, WebhookSink

__all__ = [
    "CLEARED_BEFORE",
    "EXISTED_BEFORE",
    "MAX_ATTEMPTS",
    "AutoTriage",
    "Evidence",
    "FileSink",
    "MqttSink",
    "Sink",
    "SinkError",
    "StdoutSink",
    "TriageAlreadyRunning",
    "TriageLease",
    "TriageLog",
    "TriageRecord",
    "TriageReport",
    "TriageStatus",
    "WebhookSink",
]
