"""The audit trail: one hash-chained row per invocation, whoever called, however it ended."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from semantic_kernel import Kernel
from semantic_kernel.exceptions import KernelInvokeException
from semantic_kernel.filters.filter_types import FilterTypes
from semantic_kernel.filters.functions.function_invocation_context import FunctionInvocationContext
from semantic_kernel.functions import FunctionResult, KernelArguments
from typer.testing import CliRunner

from doors.cli import audit_cmd
from doors.cli.common import CliState
from governance.audit_log import (
    GENESIS_HASH,
    AuditLog,
    AuditOutcome,
    AuditRow,
    row_hash,
)
from governance.identity import CallContext, acting_as
from kernel_setup.arguments import ToolArgumentError
from kernel_setup.filters import AuditFilter, validate_arguments
from kernel_setup.local_identity import os_user
from plugins import AlarmsPlugin, AssetsPlugin, Effect, SensorsPlugin
from storage import INTEGRITY_ERRORS, Database, open_database
from twin import AlarmService, AssetService, NotFoundError, SensorService
from twin.sample_fleet import load_sample_fleet

Filter = Callable[[FunctionInvocationContext, Callable[[FunctionInvocationContext], Awaitable[None]]], Awaitable[None]]


@dataclass
class Audited:
    db: Database
    log: AuditLog
    kernel: Kernel

    async def invoke(self, name: str, **arguments: Any) -> FunctionResult | None:
        plugin, _, function = name.partition("-")
        return await self.kernel.invoke(self.kernel.get_function(plugin, function), KernelArguments(**arguments))

    async def rows(self) -> list[AuditRow]:
        return await self.log.tail(10_000)

    async def tamper(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(sql, params)


def build_kernel(db: Database, log: AuditLog, *inner: Filter) -> Kernel:
    """The production order: audit outermost, then any ``inner`` filters, then the argument check."""
    kernel = Kernel()
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, AuditFilter(log))
    for extra in inner:
        kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, extra)
    kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, validate_arguments)
    kernel.add_plugin(AssetsPlugin(AssetService(db)), plugin_name="assets")
    kernel.add_plugin(AlarmsPlugin(AlarmService(db)), plugin_name="alarms")
    kernel.add_plugin(SensorsPlugin(SensorService(db)), plugin_name="sensors")
    return kernel


@pytest.fixture
def db_path(database_target: str | Path) -> str | Path:
    """The audit database: an SQLite file, or a PostgreSQL URL (each test runs on both)."""
    return database_target


@pytest.fixture
async def audited(db_path: str | Path) -> AsyncIterator[Audited]:
    db = await open_database(db_path)
    await load_sample_fleet(db)
    log = AuditLog(db)
    yield Audited(db, log, build_kernel(db, log))
    await db.close()


async def test_a_successful_invocation_appends_one_ok_row_with_digest_and_duration(audited: Audited) -> None:
    result = await audited.invoke("assets-get_pump_details", pump_id="PUMP-007")
    assert result is not None
    [row] = await audited.rows()
    assert row.function == "assets-get_pump_details"
    assert row.effect is Effect.READ
    assert row.outcome is AuditOutcome.OK and row.detail is None
    assert row.arguments == {"pump_id": "PUMP-007"}
    assert row.result_digest == hashlib.sha256(str(result.value).encode()).hexdigest()
    assert row.duration_ms is not None and row.duration_ms >= 0
    assert row.id == 1 and row.prev_hash == GENESIS_HASH
    assert await audited.log.verify() is None


async def test_a_failing_function_is_recorded_as_error_and_its_exception_passes_through_unchanged(
    audited: Audited,
) -> None:
    with pytest.raises(KernelInvokeException) as raised:
        await audited.invoke("assets-get_pump_details", pump_id="PUMP-999")
    assert isinstance(raised.value.__cause__, NotFoundError)
    [row] = await audited.rows()
    assert row.outcome is AuditOutcome.ERROR
    assert row.detail == str(raised.value.__cause__) and "PUMP-999" in row.detail
    assert row.result_digest is None and row.duration_ms is not None


async def test_an_argument_refused_by_the_argument_check_is_recorded_as_rejected(audited: Audited) -> None:
    with pytest.raises(KernelInvokeException) as raised:
        await audited.invoke("assets-list_pumps", status="running")
    assert isinstance(raised.value.__cause__, ToolArgumentError)
    [row] = await audited.rows()
    assert row.outcome is AuditOutcome.REJECTED
    assert row.arguments == {"status": "running"}
    assert row.detail is not None and "use one of online, offline, maintenance" in row.detail


async def test_principal_and_session_come_from_the_call_context_never_from_arguments(audited: Audited) -> None:
    with acting_as(CallContext(principal="alice", session="S-1", door="cli")):
        await audited.invoke("assets-get_system_summary")
        with pytest.raises(KernelInvokeException):
            await audited.invoke("assets-get_pump_details", pump_id="PUMP-001", principal="mallory", session="S-X")
    ok, smuggled = await audited.rows()
    for row in (ok, smuggled):
        assert (row.principal, row.session, row.door) == ("alice", "S-1", "cli")
    assert smuggled.outcome is AuditOutcome.REJECTED
    assert smuggled.arguments == {"pump_id": "PUMP-001", "principal": "mallory", "session": "S-X"}


async def test_without_a_door_the_caller_is_recorded_as_anonymous(audited: Audited) -> None:
    await audited.invoke("assets-get_system_summary")
    [row] = await audited.rows()
    assert (row.principal, row.session, row.door) == ("anonymous", None, "unknown")


@pytest.mark.parametrize("status", [AuditOutcome.DENIED, AuditOutcome.PENDING_APPROVAL])
async def test_a_later_filter_reports_denied_or_pending_through_result_metadata(
    db_path: str | Path, status: AuditOutcome
) -> None:
    async def gate(context: FunctionInvocationContext, next: Callable[..., Awaitable[None]]) -> None:
        context.result = FunctionResult(
            function=context.function.metadata,
            value='{"status": "parked"}',
            metadata={"pumpops_status": status.value, "pumpops_detail": "APR-1"},
        )

    db = await open_database(db_path)
    try:
        await load_sample_fleet(db)
        log = AuditLog(db)
        kernel = build_kernel(db, log, gate)
        await kernel.invoke(kernel.get_function("assets", "get_pump_details"), KernelArguments(pump_id="PUMP-007"))
        [row] = await log.tail()
    finally:
        await db.close()
    assert row.outcome is status and row.detail == "APR-1"
    assert row.result_digest == hashlib.sha256(b'{"status": "parked"}').hexdigest()


async def test_record_rejected_appends_a_rejected_row_for_calls_no_filter_saw(audited: Audited) -> None:
    await audited.invoke("assets-get_system_summary")
    await audited.log.record_rejected(
        "assets-blow_up", {"force": True}, "unknown function", CallContext("bob", "S-9", "chat")
    )
    row = (await audited.rows())[-1]
    assert row.id == 2 and row.outcome is AuditOutcome.REJECTED
    assert (row.function, row.arguments, row.detail) == ("assets-blow_up", {"force": True}, "unknown function")
    assert (row.principal, row.session, row.door) == ("bob", "S-9", "chat")
    assert row.duration_ms is None and row.effect is None
    assert await audited.log.verify() is None


async def test_the_chain_links_every_row_to_the_one_before_and_verifies(audited: Audited) -> None:
    for pump in ("PUMP-001", "PUMP-002", "PUMP-003"):
        await audited.invoke("assets-get_pump_details", pump_id=pump)
    rows = await audited.rows()
    assert [r.id for r in rows] == [1, 2, 3]
    assert [r.prev_hash for r in rows] == [GENESIS_HASH, rows[0].row_hash, rows[1].row_hash]
    report = await audited.log.check_chain()
    assert report.ok and report.rows_checked == 3 and report.head_hash == rows[-1].row_hash


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("principal", "someone-else"),
        ("outcome", "ok"),
        ("arguments", '{"pump_id":"PUMP-001"}'),
        ("duration_ms", 1.0),
        ("detail", None),
    ],
)
async def test_editing_a_column_makes_verify_report_that_row(audited: Audited, column: str, value: Any) -> None:
    for pump in ("PUMP-007", "PUMP-999", "PUMP-003"):
        try:
            await audited.invoke("assets-get_pump_details", pump_id=pump)
        except KernelInvokeException:
            pass
    assert await audited.log.verify() is None
    # Column names cannot be parameters; they come from the parametrize list above, never from input.
    await audited.tamper("UPDATE audit_log SET " + column + " = ? WHERE id = 2", (value,))
    report = await audited.log.check_chain()
    assert report.first_bad_id == 2 and report.rows_checked == 1
    assert report.reason is not None and "edited" in report.reason


async def test_rewriting_a_rows_hash_to_match_moves_the_break_to_the_next_row(audited: Audited) -> None:
    for pump in ("PUMP-001", "PUMP-002", "PUMP-003"):
        await audited.invoke("assets-get_pump_details", pump_id=pump)
    await audited.tamper("UPDATE audit_log SET principal = 'x', row_hash = ? WHERE id = 2", ("f" * 64,))
    assert await audited.log.verify() == 2
    row = (await audited.rows())[1]
    forged = row_hash({**row.model_dump(), "effect": "read", "outcome": "ok", "arguments": '{"pump_id":"PUMP-002"}'})
    await audited.tamper("UPDATE audit_log SET row_hash = ? WHERE id = 2", (forged,))
    report = await audited.log.check_chain()
    assert report.first_bad_id == 3 and report.reason is not None and "prev_hash" in report.reason


@pytest.mark.parametrize(("deleted", "reported"), [(2, 3), (1, 2)])
async def test_deleting_a_row_is_detected_at_the_row_after_the_gap(
    audited: Audited, deleted: int, reported: int
) -> None:
    for pump in ("PUMP-001", "PUMP-002", "PUMP-003", "PUMP-004"):
        await audited.invoke("assets-get_pump_details", pump_id=pump)
    await audited.tamper("DELETE FROM audit_log WHERE id = ?", (deleted,))
    report = await audited.log.check_chain()
    assert report.first_bad_id == reported
    assert report.reason is not None and "deleted or inserted" in report.reason


async def test_a_second_row_on_the_same_head_is_refused_by_the_schema(audited: Audited) -> None:
    await audited.invoke("assets-get_system_summary")
    [row] = await audited.rows()
    with pytest.raises(INTEGRITY_ERRORS):
        await audited.tamper(
            "INSERT INTO audit_log (id, at, principal, door, function, arguments, outcome, prev_hash, row_hash) "
            "VALUES (2, ?, 'x', 'x', 'x', '{}', 'ok', ?, ?)",
            (row.at, row.prev_hash, "e" * 64),
        )


async def test_fifty_concurrent_invocations_append_one_unbroken_chain(audited: Audited) -> None:
    pumps = [f"PUMP-00{i % 8 + 1}" for i in range(50)]
    with acting_as(CallContext(principal="load", session="S-50")):
        await asyncio.gather(*(audited.invoke("assets-get_pump_details", pump_id=p) for p in pumps))
    rows = await audited.rows()
    assert [r.id for r in rows] == list(range(1, 51))
    assert sorted(r.arguments["pump_id"] for r in rows) == sorted(pumps)
    assert {r.principal for r in rows} == {"load"}
    assert await audited.log.verify() is None


async def test_a_row_rolled_back_with_its_write_leaves_the_next_append_on_the_real_head(audited: Audited) -> None:
    await audited.log.record(function="assets-list_pumps", arguments={}, outcome=AuditOutcome.OK)
    with pytest.raises(RuntimeError):
        async with audited.db.transaction() as conn:
            await audited.log.record_in(conn, function="work_orders-create", arguments={}, outcome=AuditOutcome.OK)
            raise RuntimeError("the write failed after its audit row")
    await audited.log.record(function="assets-list_pumps", arguments={}, outcome=AuditOutcome.OK)
    rows = await audited.rows()
    assert [(row.id, row.function) for row in rows] == [(1, "assets-list_pumps"), (2, "assets-list_pumps")]
    assert rows[1].prev_hash == rows[0].row_hash
    assert await audited.log.verify() is None


async def test_two_database_handles_on_one_file_append_concurrently_without_forking(db_path: str | Path) -> None:
    first, second = await open_database(db_path), await open_database(db_path)
    try:
        logs = [AuditLog(first), AuditLog(second)]

        async def append(log: AuditLog, who: str) -> None:
            for i in range(30):
                await log.record(
                    function="assets-list_pumps",
                    arguments={"i": i},
                    outcome=AuditOutcome.OK,
                    call=CallContext(principal=who),
                )

        await asyncio.gather(append(logs[0], "one"), append(logs[1], "two"), append(logs[0], "three"))
        rows = await logs[1].tail(1_000)
        assert [r.id for r in rows] == list(range(1, 91))
        assert sorted(r.principal for r in rows) == sorted(["one", "two", "three"] * 30)
        assert await logs[0].verify() is None
    finally:
        await first.close()
        await second.close()


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from governance.audit_log import AuditLog, AuditOutcome
    from governance.identity import CallContext
    from storage import open_database

    async def main(path, who):
        db = await open_database(path)
        try:
            log = AuditLog(db)
            for i in range(40):
                await log.record(function="alarms-list_alarms", arguments={"i": i}, outcome=AuditOutcome.OK,
                                 call=CallContext(principal=who, door="process"))
        finally:
            await db.close()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def test_two_processes_append_concurrently_without_forking(db_path: str | Path) -> None:
    db = await open_database(db_path)  # created and migrated before the writers start
    try:
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-c", _WRITER, str(db_path), who, stderr=asyncio.subprocess.PIPE
            )
            for who in ("p1", "p2")
        ]
        for proc in procs:
            _, err = await asyncio.wait_for(proc.communicate(), timeout=120)
            assert proc.returncode == 0, err.decode()
        log = AuditLog(db)
        rows = await log.tail(1_000)
        assert [r.id for r in rows] == list(range(1, 81))
        assert sorted(r.principal for r in rows) == ["p1"] * 40 + ["p2"] * 40
        assert await log.verify() is None
    finally:
        await db.close()


def run_audit_cli(settings_file: Path, *args: str) -> Any:
    cli = CliState(
        settings_path=str(settings_file),
        console=Console(width=200, force_terminal=False),
        err_console=Console(stderr=True, width=200, force_terminal=False),
    )
    return CliRunner().invoke(audit_cmd.app, list(args), obj=cli)


@pytest.fixture
def audit_settings(tmp_path: Path, db_path: str | Path) -> Path:
    path = tmp_path / "appsettings.json"
    database = {"Url": db_path} if isinstance(db_path, str) else {"Path": str(db_path)}
    sections = {
        "Database": database,
        "Qdrant": {"Path": ":memory:"},
        "Identity": {"Roles": {os_user(): ["auditor"]}},  # reading the audit trail needs the role
    }
    path.write_text(json.dumps(sections))
    return path


async def test_cli_verify_exits_0_on_an_intact_chain_and_1_naming_the_first_bad_row(
    audited: Audited, audit_settings: Path
) -> None:
    with acting_as(CallContext(principal="ops", session="S-7", door="cli")):
        for pump in ("PUMP-001", "PUMP-002", "PUMP-003"):
            await audited.invoke("assets-get_pump_details", pump_id=pump)

    good = await asyncio.to_thread(run_audit_cli, audit_settings, "verify")
    assert good.exit_code == 0, good.output
    assert "intact: 3 rows" in good.stdout

    as_json = await asyncio.to_thread(run_audit_cli, audit_settings, "verify", "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["ok"] is True

    await audited.tamper("UPDATE audit_log SET outcome = 'denied' WHERE id = 2")
    bad = await asyncio.to_thread(run_audit_cli, audit_settings, "verify")
    assert bad.exit_code == 1
    assert "broken at row 2" in bad.stderr

    bad_json = await asyncio.to_thread(run_audit_cli, audit_settings, "verify", "--json")
    assert bad_json.exit_code == 1
    assert json.loads(bad_json.stdout) | {"reason": None} == {
        "ok": False,
        "rows_checked": 1,
        "first_bad_id": 2,
        "reason": None,
        "head_hash": None,
    }


async def test_cli_tail_shows_the_newest_rows_oldest_first(audited: Audited, audit_settings: Path) -> None:
    with acting_as(CallContext(principal="ops", session="S-7", door="cli")):
        for pump in ("PUMP-001", "PUMP-002", "PUMP-003"):
            await audited.invoke("assets-get_pump_details", pump_id=pump)

    result = await asyncio.to_thread(run_audit_cli, audit_settings, "tail", "-n", "2", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == [2, 3]
    assert rows[1]["arguments"] == {"pump_id": "PUMP-003"} and rows[1]["principal"] == "ops"
    assert rows[1]["outcome"] == "ok" and rows[1]["effect"] == "read"

    human = await asyncio.to_thread(run_audit_cli, audit_settings, "tail")
    assert human.exit_code == 0
    assert "#3" in human.stdout and "ops/S-7 via cli: assets-get_pump_details" in human.stdout


def test_cli_fails_cleanly_when_there_is_no_database(tmp_path: Path) -> None:
    settings = tmp_path / "appsettings.json"
    sections = {"Database": {"Path": "missing/none.db"}, "Identity": {"Roles": {os_user(): ["auditor"]}}}
    settings.write_text(json.dumps(sections))
    result = run_audit_cli(settings, "verify")
    assert result.exit_code == 2
    assert "No database at" in result.stderr and not (tmp_path / "missing").exists()
