"""The approval queue at scale: listings filter before they page and say the total; one requester cannot flood it."""

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from semantic_kernel.functions import KernelArguments

from governance import ApprovalError
from governance.identity import CallContext, acting_as
from kernel_setup import AppContext, load_settings, open_app
from storage import open_database
from tests.callers import supervisor
from tests.doors.cli.test_cli_tools import run_cli
from tests.governance.test_approvals import ORDER, count, propose, settings_for
from tests.governance.test_approvals_cli import park_order, write_settings

MANY = 260  # more than the 200 newest the listing used to keep before filtering


def many_pending(start: datetime, n: int, requested_by: str = "model-flood") -> list[tuple[str, ...]]:
    """Pending approvals, each a distinct intent, requested one second apart after ``start``."""
    rows: list[tuple[str, ...]] = []
    for i in range(n):
        at = start + timedelta(seconds=i + 1)
        rows.append(
            (
                f"APR-F{i:07X}",
                "work_orders-create_work_order",
                json.dumps({**ORDER, "summary": f"flood {i}"}),
                f"hash-{i}",
                f"intent-{i}",
                requested_by,
                at.isoformat(timespec="seconds"),
                (at + timedelta(days=1)).isoformat(timespec="seconds"),
            )
        )
    return rows


INSERT = (
    "INSERT INTO approvals (approval_id, function, arguments, args_hash, intent_key, status, requested_by, "
    "requested_at, expires_at) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)"
)


async def test_an_old_executed_approval_is_listed_under_its_status_however_many_newer_ones_are_parked(
    app: AppContext,
) -> None:
    old = await propose(app)
    await app.approvals.approve(old["approval_id"], supervisor("bob"))
    await app.db.execute_many(INSERT, many_pending(datetime.now(UTC), MANY))

    executed = await app.approvals.list("executed")
    assert [a.id for a in executed.approvals] == [old["approval_id"]] and executed.total == 1
    assert executed.describe() == "showing 1-1 of 1"
    everything = await app.approvals.list("all")
    assert everything.total == MANY + 1 and len(everything.approvals) == 50 and everything.next_offset == 50
    assert everything.describe() == f"showing 1-50 of {MANY + 1}"


async def test_pages_of_one_status_cover_every_match_once_newest_first(app: AppContext) -> None:
    await app.db.execute_many(INSERT, many_pending(datetime.now(UTC), MANY))
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await app.approvals.list("pending", limit=70, offset=offset)
        assert page.total == MANY
        seen += [a.id for a in page.approvals]
        offset = page.next_offset
    assert len(seen) == len(set(seen)) == MANY
    assert seen[0] == f"APR-F{MANY - 1:07X}" and seen[-1] == "APR-F0000000"
    past = await app.approvals.list("pending", offset=MANY)
    assert past.approvals == [] and past.describe() == f"showing none of {MANY} (offset {MANY} is past the end)"


async def test_expired_approvals_are_counted_as_expired_not_pending(app: AppContext) -> None:
    await app.db.execute_many(INSERT, many_pending(datetime.now(UTC) - timedelta(days=3), 5))  # expired a day ago
    await app.db.execute_many(
        INSERT, [(f"APR-A{i:07X}", *row[1:]) for i, row in enumerate(many_pending(datetime.now(UTC), 3))]
    )
    assert (await app.approvals.list("expired")).total == 5
    assert {a.status.value for a in (await app.approvals.list("expired")).approvals} == {"expired"}
    assert (await app.approvals.list("pending")).total == 3


async def test_a_bad_page_is_refused_saying_what_a_valid_one_looks_like(app: AppContext) -> None:
    for limit, offset in ((0, 0), (1001, 0), (10, -1)):
        with pytest.raises(ApprovalError, match="limit of 1 to 1000 and an offset of 0 or more"):
            await app.approvals.list("pending", limit=limit, offset=offset)
    with pytest.raises(ApprovalError, match="or all"):
        await app.approvals.list("maybe")


async def insert_pending(settings: Path, rows: list[tuple[str, ...]]) -> None:
    """Write ``rows`` (`INSERT`) straight into the database ``settings`` points to, as no door would."""
    db = await open_database(load_settings(settings, env={}).database_target, migrate=False)
    try:
        await db.execute_many(INSERT, rows)
    finally:
        await db.close()


def test_the_cli_lists_one_status_a_page_at_a_time_with_the_total(tmp_path: Path, database_target: str | Path) -> None:
    settings = write_settings(tmp_path, "supervisor", database=database_target)
    parked = {"approval_id": park_order(settings)}
    assert run_cli(settings, "approvals", "approve", parked["approval_id"]).returncode == 0
    asyncio.run(insert_pending(settings, many_pending(datetime.now(UTC), MANY)))

    executed = run_cli(settings, "approvals", "list", "--status", "executed")
    assert executed.returncode == 0, executed.stderr
    assert parked["approval_id"] in executed.stdout and "showing 1-1 of 1 executed approvals" in executed.stdout
    page = run_cli(settings, "approvals", "list", "--status", "all", "--limit", "2", "--offset", "1", "--json")
    data = json.loads(page.stdout)
    assert (data["total"], data["offset"], data["limit"], len(data["approvals"])) == (MANY + 1, 1, 2, 2)
    assert [a["id"] for a in data["approvals"]] == [f"APR-F{MANY - 2:07X}", f"APR-F{MANY - 3:07X}"]
    first = run_cli(settings, "approvals", "list", "--status", "pending")
    assert f"showing 1-50 of {MANY} pending approvals; the next page: --offset 50" in first.stdout
    bad = run_cli(settings, "approvals", "list", "--limit", "0")
    assert bad.returncode == 2 and "--limit" in bad.stderr


# --- the cap on pending approvals per requester --------------------------------------------------------------


async def test_a_requester_at_the_pending_cap_is_refused_with_a_message_for_the_model_and_audited(
    tmp_path: Path,
    database_target: str | Path,
) -> None:
    async with open_app(settings_for(tmp_path, MaxPendingPerPrincipal=3, database=database_target)) as app:
        parked = [await propose(app, **{**ORDER, "summary": f"Check {i}"}) for i in range(3)]
        assert {p["status"] for p in parked} == {"pending_approval"}
        again = await propose(app, **{**ORDER, "summary": "Check 0"})  # the same intent: its approval, not a refusal
        assert again["approval_id"] == parked[0]["approval_id"]

        refused = await propose(app, principal="ALICE", **{**ORDER, "summary": "Check 3"})  # alice, spelt otherwise
        assert refused["status"] == "denied" and (refused["pending"], refused["limit"]) == (3, 3)
        assert "already has 3 actions waiting for a supervisor's approval" in refused["message"]
        assert (
            "nothing was executed" in refused["message"] and "A supervisor must approve or reject" in refused["message"]
        )
        assert await count(app, "apr") == 3 and await count(app, "wo") == 0
        row = await app.db.fetch_one("SELECT outcome, detail FROM audit_log ORDER BY id DESC LIMIT 1")
        assert row is not None and (row["outcome"], row["detail"]) == ("denied", "3 pending, limit 3")

        other = await propose(app, principal="carol", **{**ORDER, "summary": "Check 3"})
        assert other["status"] == "pending_approval"  # the cap is per requester
        await app.approvals.reject(parked[0]["approval_id"], supervisor("bob"), reason="duplicate")
        assert (await propose(app, **{**ORDER, "summary": "Check 3"}))["status"] == "pending_approval"
        assert await app.audit.verify() is None


async def test_writes_allowed_by_policy_are_not_held_back_by_the_pending_cap(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = settings_for(
        tmp_path, MaxPendingPerPrincipal=1, Policy={"alarms": {"acknowledge_alarm": "allow"}}, database=database_target
    )
    async with open_app(settings) as app:
        assert (await propose(app))["status"] == "pending_approval"
        with acting_as(CallContext(principal="alice", session="s1", door="test")):
            function = app.kernel.get_function("alarms", "acknowledge_alarm")
            result = await app.kernel.invoke(function, KernelArguments(alarm_id="ALM-0002", note="Crew on the way"))
        assert result is not None and json.loads(str(result.value))["status"] == "executed"
