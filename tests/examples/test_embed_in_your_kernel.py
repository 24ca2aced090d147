"""The documented integrator example (examples/embed_in_your_kernel.py) runs as written on a kernel of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from semantic_kernel import Kernel

from examples.embed_in_your_kernel import run
from kernel_setup import Settings, add_pumpops_plugins, open_app
from kernel_setup.errors import SettingsError


async def test_the_example_reads_parks_the_write_and_audits_the_integrators_principal(settings: Settings) -> None:
    outcome = await run(settings, principal="scada-bridge")

    assert outcome["pump"] == "PUMP-007"
    assert "PUMP-007" in outcome["note"]
    assert outcome["proposal"]["status"] == "pending_approval"
    assert outcome["proposal"]["approval_id"].startswith("APR-")
    assert outcome["approval"]["status"] == "executed"
    assert outcome["approval"]["requested_by"] == "scada-bridge"
    by_function = {(row["function"], row["outcome"]): row for row in outcome["audit"]}
    read = by_function[("assets-get_pump_details", "ok")]
    own = by_function[("shift_log-latest_note", "ok")]
    parked = by_function[("work_orders-create_work_order", "pending_approval")]
    assert {read["principal"], own["principal"], parked["principal"]} == {"scada-bridge"}
    assert {read["door"], own["door"], parked["door"]} == {"embedded"}
    executed = [
        r for r in outcome["audit"] if r["function"] == "work_orders-create_work_order" and r["outcome"] == "ok"
    ]
    assert len(executed) == 1 and executed[0]["principal"] == "j.supervisor"


async def test_adding_the_plugins_twice_installs_the_filters_and_plugins_once(settings: Settings) -> None:
    async with open_app(settings) as app:
        kernel = Kernel()
        add_pumpops_plugins(kernel, app)
        filters = list(kernel.function_invocation_filters)
        auto = list(kernel.auto_function_invocation_filters)
        plugins = {name: plugin for name, plugin in kernel.plugins.items()}
        add_pumpops_plugins(kernel, app)
        assert kernel.function_invocation_filters == filters
        assert kernel.auto_function_invocation_filters == auto
        assert {name: plugin for name, plugin in kernel.plugins.items()} == plugins


async def test_a_kernel_guarded_by_one_app_refuses_the_plugins_of_another(settings: Settings, tmp_path: Path) -> None:
    other = settings.model_copy(update={"database": settings.database.model_copy(update={"path": tmp_path / "o.db"})})
    async with open_app(settings) as first, open_app(other) as second:
        kernel = add_pumpops_plugins(Kernel(), first)
        with pytest.raises(SettingsError, match="another app"):
            add_pumpops_plugins(kernel, second)
