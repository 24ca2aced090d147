"""The composition root: open the database and services, build the kernel, hand them to the doors.

Nothing here runs at import time; every door (CLI, MCP, tests, an integrator's app) opens an
`AppContext` with `open_app(settings)` and closes it when done.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
import ollama
from semantic_kernel import Kernel
from semantic_kernel.filters.filter_types import FilterTypes

from governance import ApprovalStore
from governance.audit_log import AuditLog, AuditOutcome
from governance.identity import CallContext
from governance.roles import Proof
from kernel_setup.approval_tracing import TracedApprovalService
from kernel_setup.approvals import ApprovalService
from kernel_setup.errors import SettingsError
from kernel_setup.filters import validate_arguments
from kernel_setup.filters.approval import POLICY_APPROVER, ApprovalGate, check_policy
from kernel_setup.filters.audit import AuditFilter
from kernel_setup.filters.outcome import track_outcome
from kernel_setup.filters.tracing import TraceFilter
from kernel_setup.filters.turn_guard import stop_repeated_calls
from kernel_setup.manuals import document_index
from kernel_setup.settings import OllamaSettings, Settings
from kernel_setup.tracing import Tracing, build_tracing
from memory import DocumentIndex, Embedder
from plugins import AlarmsPlugin, AssetsPlugin, SensorsPlugin
from plugins.docs import DocsPlugin
from plugins.work_orders import WorkOrdersPlugin
from storage import Database, open_database
from twin import AlarmService, AssetService, SensorService
from twin.freshness import Clock, Staleness, utc_now
from twin.sample_fleet import load_sample_fleet
from twin.work_orders import WorkOrderService

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

STARTUP = CallContext(principal="pumpops", door="startup", proof=Proof.SERVICE)
"""Who the audit row of a start is recorded as."""
POLICY_AUDIT_FUNCTION = "settings-approval_policy"
"""The audit row's function name for a start whose `Approval.Policy` lets writes run without approval."""


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class AppContext:
    """Everything a door needs, opened once and shared: settings, database, services, kernel."""

    settings: Settings
    db: Database
    assets: AssetService
    alarms: AlarmService
    sensors: SensorService
    audit: AuditLog
    chat_client: ollama.AsyncClient
    manuals: DocumentIndex
    work_orders: WorkOrderService
    approval_store: ApprovalStore
    kernel: Kernel = field(default_factory=Kernel)
    tracing: Tracing = field(default_factory=Tracing.off)

    @property
    def approvals(self) -> ApprovalService:
        """The supervisor's approvals service (list, approve, reject) on this app's kernel."""
        if self.tracing.enabled:  # each decision is also a pumpops.approval span
            return TracedApprovalService(
                self.approval_store, self.kernel, self.settings.approval, self.audit, tracing=self.tracing
            )
        return ApprovalService(self.approval_store, self.kernel, self.settings.approval, self.audit)


def ollama_client(settings: OllamaSettings, transport: httpx.AsyncBaseTransport | None = None) -> ollama.AsyncClient:
    """An Ollama client for the configured host (a transport may be given for tests)."""
    if transport is not None:
        return ollama.AsyncClient(host=settings.host, timeout=settings.timeout_seconds, transport=transport)
    return ollama.AsyncClient(host=settings.host, timeout=settings.timeout_seconds)


def add_pumpops_filters(kernel: Kernel, app: AppContext) -> Kernel:
    """Install the filters every invocation passes, outermost first; a kernel that has them keeps them as they are.

    Audit, outcome tracking, argument check, approval gate; plus the loop guard for model calls. With tracing on,
    the ``execute_tool`` span filter goes first, around the audit filter.

    Raises:
        SettingsError: ``kernel`` already carries the filters of another app (another audit trail).
    """
    installed = _installed_audit(kernel)
    if installed is not None:
        if installed.log is not app.audit:
            raise SettingsError(
                "This kernel already carries PumpOps filters from another app (another database and audit trail); "
                "add the plugins of one app per kernel."
            )
        return kernel
    if app.tracing.enabled:
        kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, TraceFilter(app.tracing))
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, AuditFilter(app.audit, record_reads=app.settings.audit.enabled))
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, track_outcome)
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, validate_arguments)
    kernel.add_filter(
        FilterTypes.FUNCTION_INVOCATION, ApprovalGate(app.approval_store, app.settings.approval, app.audit)
    )
    kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, stop_repeated_calls)
    return kernel


def add_pumpops_plugins(kernel: Kernel, app: AppContext) -> Kernel:
    """Add the PumpOps plugins and the filters that guard them to ``kernel`` (an integrator's own included).

    Idempotent: calling it again on the same kernel installs nothing twice (the filters once, each plugin once).
    The kernel's own plugins keep working and pass the same filters: they are audited, and their writes parked.
    """
    add_pumpops_filters(kernel, app)
    plugins = {
        "assets": lambda: AssetsPlugin(app.assets),
        "alarms": lambda: AlarmsPlugin(app.alarms),
        "sensors": lambda: SensorsPlugin(app.sensors),
        "docs": lambda: DocsPlugin(app.manuals),
        "work_orders": lambda: WorkOrdersPlugin(app.work_orders, app.approval_store),
    }
    for name, plugin in plugins.items():
        if name not in kernel.plugins:
            kernel.add_plugin(plugin(), plugin_name=name)
    return kernel


def _installed_audit(kernel: Kernel) -> AuditFilter | None:
    """The PumpOps audit filter ``kernel`` already runs, if any."""
    return next((f for _, f in kernel.function_invocation_filters if isinstance(f, AuditFilter)), None)


def build_kernel(app: AppContext) -> Kernel:
    """A new kernel with the PumpOps plugins and filters."""
    return add_pumpops_plugins(Kernel(), app)


@asynccontextmanager
async def open_app(
    settings: Settings,
    *,
    load_sample: bool = True,
    chat_transport: httpx.AsyncBaseTransport | None = None,
    embedder: Embedder | None = None,
    manuals: DocumentIndex | None = None,
    warn: Callable[[str], None] = _to_stderr,
    clock: Clock = utc_now,
    span_exporter: SpanExporter | None = None,
) -> AsyncIterator[AppContext]:
    """Open the database (created, migrated and, when empty, loaded with the sample fleet) and build the kernel.

    ``chat_transport`` replaces the HTTP transport to Ollama (tests use a scripted fake); ``embedder``
    shares an already loaded embedding model; ``manuals`` shares a manuals index the caller closes
    (one open index per local Qdrant folder). The manuals index opens Qdrant and loads the model only
    when first searched. ``warn`` receives one line per write that `Approval.Policy` lets run without
    approval (default: stderr); each such start is also recorded in the audit trail. ``clock`` is the time a latest
    reading's age is measured against (`Telemetry.StaleAfterSeconds`; tests pass their own). ``span_exporter``
    replaces the exporter `Tracing.Exporter` names (tests pass an in-memory one); with `Tracing.Enabled` false no
    tracer provider is built at all.

    Raises:
        SettingsError: `Approval.Policy` names a plugin or function the kernel does not have.
    """
    db = await open_database(settings.database_target)
    owned = manuals is None
    manuals = manuals or document_index(settings, embedder)
    staleness = Staleness(settings.telemetry.stale_after_seconds, clock)
    tracing = build_tracing(settings.tracing, span_exporter)
    try:
        app = AppContext(
            settings=settings,
            db=db,
            assets=AssetService(db, staleness),
            alarms=AlarmService(db),
            sensors=SensorService(db, staleness),
            audit=AuditLog(db),
            chat_client=ollama_client(settings.ollama, chat_transport),
            manuals=manuals,
            work_orders=WorkOrderService(db),
            approval_store=ApprovalStore(db),
            tracing=tracing,
        )
        app.kernel = build_kernel(app)
        unapproved = check_policy(settings.approval, app.kernel, source=settings.source)
        if load_sample:
            await load_sample_fleet(db)
        await _announce_unapproved_writes(app, [f.fully_qualified_name for f in unapproved], warn)
        yield app
    finally:
        if owned:
            await manuals.close()
        await db.close()
        tracing.shutdown()


async def _announce_unapproved_writes(app: AppContext, names: list[str], warn: Callable[[str], None]) -> None:
    """Warn (one line per function) and record in the audit trail that the policy lets writes skip approval."""
    if not names:
        return
    source = app.settings.source
    for name in names:
        warn(
            f"warning: Approval.Policy in {source} allows {name} to run without approval; its writes happen at once, "
            f"approved by {POLICY_APPROVER!r}."
        )
    await app.audit.record(
        function=POLICY_AUDIT_FUNCTION,
        arguments={"allow": names, "settings": source},
        outcome=AuditOutcome.OK,
        call=STARTUP,
        detail=f"started with Approval.Policy allowing unapproved writes: {', '.join(names)}",
    )
