"""The exact tool schema the model receives, pinned: a change fails here, on purpose.

To accept an intended change, run with UPDATE_SNAPSHOTS=1 and review the diff.
"""

import json
import os
from pathlib import Path

import pytest
from semantic_kernel import Kernel

from kernel_setup.direct_calls import tool_definitions

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.mark.parametrize("plugin", ["assets", "alarms", "sensors", "work_orders"])
def test_tool_schema_matches_the_snapshot(kernel: Kernel, plugin: str) -> None:
    definitions = [d for d in tool_definitions(kernel) if d["function"]["name"].startswith(f"{plugin}-")]
    path = SNAPSHOTS / f"{plugin}.json"
    rendered = json.dumps(definitions, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(rendered, encoding="utf-8")
    assert rendered == path.read_text(encoding="utf-8")


def test_every_parameter_is_described_with_an_example(kernel: Kernel) -> None:
    for definition in tool_definitions(kernel):
        if definition["function"]["name"].split("-")[0] not in {"assets", "alarms", "sensors", "work_orders"}:
            continue
        function = definition["function"]
        assert function["description"].startswith("Returns"), function["name"]
        for name, schema in function["parameters"]["properties"].items():
            assert "e.g." in schema.get("description", ""), f"{function['name']}.{name}"
