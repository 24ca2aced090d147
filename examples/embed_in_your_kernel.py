"""Embed PumpOps in your own Semantic Kernel app: your kernel, your plugin, PumpOps' plugins and filters beside it.

Run it from the project root (it uses the settings PumpOps finds there: ``--settings`` aside, the same
lookup as the CLI): ``python examples/embed_in_your_kernel.py``. What it shows:

- ``add_pumpops_plugins`` adds the PumpOps plugins and the filters that guard every invocation to a kernel
  you built; calling it twice changes nothing.
- Reads answer at once; your own plugin answers too, and passes the same filters: declare its reads with
  ``plugins.declarations.reads`` (an undeclared function counts as a write and is parked for a supervisor).
- A write is parked for a supervisor (``pending_approval`` with an ``APR-…`` id), whoever's kernel proposed it.
- The audit trail records the principal your app set with ``acting_as(CallContext(...))``.
- A supervisor's approval executes the parked write exactly once, through the same governed path. Your app
  passes the supervisor as it authenticated them (``proof``) with the supervisor role: PumpOps refuses a
  decision from a principal nobody proved, one without the role, or the requester itself.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from semantic_kernel import Kernel
from semantic_kernel.functions import kernel_function

from governance.roles import Proof, Role
from kernel_setup import CallContext, Settings, acting_as, add_pumpops_plugins, load_settings, open_app
from plugins.declarations import reads


class ShiftLogPlugin:
    """An integrator's own plugin: the control room's shift notes."""

    @reads  # undeclared functions count as writes: the approval gate would park this one for a supervisor
    @kernel_function(name="latest_note", description="Returns the latest shift note. Use it for handover questions.")
    def latest_note(self, station: Annotated[str, "Station name, e.g. 'Station-C'."]) -> str:
        """The latest note for ``station``."""
        return json.dumps({"station": station, "note": "Night shift: PUMP-007 louder than usual."})


async def run(settings: Settings, principal: str = "scada-bridge") -> dict[str, Any]:
    """Use PumpOps from a kernel of your own; returns what each step saw."""
    async with open_app(settings) as app:
        kernel = Kernel()
        kernel.add_plugin(ShiftLogPlugin(), plugin_name="shift_log")
        add_pumpops_plugins(kernel, app)
        add_pumpops_plugins(kernel, app)  # idempotent: the filters and plugins are installed once

        with acting_as(CallContext(principal=principal, door="embedded")):
            details = await kernel.invoke(plugin_name="assets", function_name="get_pump_details", pump_id="PUMP-007")
            note = await kernel.invoke(plugin_name="shift_log", function_name="latest_note", station="Station-C")
            parked = await kernel.invoke(
                plugin_name="work_orders",
                function_name="create_work_order",
                pump_id="PUMP-007",
                priority="urgent",
                summary="Inspect drive-end bearing; vibration 9.4 mm/s (zone D).",
            )
        proposal = json.loads(str(parked))
        # Your app authenticated the supervisor (its own sign-in, say OAuth) and knows they hold the role.
        supervisor = CallContext(
            principal="j.supervisor", door="embedded", proof=Proof.OAUTH, roles=frozenset({Role.SUPERVISOR})
        )
        approved = await app.approvals.approve(proposal["approval_id"], supervisor)
        trail = await app.audit.tail(10)
        return {
            "pump": json.loads(str(details))["pump_id"],
            "note": json.loads(str(note))["note"],
            "proposal": proposal,
            "approval": approved.model_dump(mode="json"),
            "audit": [row.model_dump(mode="json") for row in trail],
            "filters": len(kernel.function_invocation_filters),
        }


def main() -> None:
    """Run the example on the settings PumpOps would use here, and print what it saw."""
    outcome = asyncio.run(run(load_settings()))
    print(json.dumps({k: v for k, v in outcome.items() if k != "audit"}, indent=2))
    for row in outcome["audit"]:
        print(f"{row['at']}  {row['principal']:<14} {row['door']:<10} {row['function']:<36} {row['outcome']}")


if __name__ == "__main__":
    main()
