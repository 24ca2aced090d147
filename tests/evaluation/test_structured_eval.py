"""`pumpops --settings FILE eval` measures structured answers: the settings file switches them on for every trial.

The fake Ollama is served over real HTTP (`Ollama.Host`), so the eval runs as the operator runs it.
"""

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from doors.cli.main import app as cli_app
from tests.durability.ollama_http import FakeOllamaServer
from tests.fakes.ollama import call, reply


def test_an_eval_with_structured_answers_on_scores_the_answers_code_wrote_from_the_cited_records(
    tmp_path: Path,
) -> None:
    steps: list[dict[str, Any] | str] = [
        reply("Hello! Ask me about the pumps."),  # the unscored warm-up turn
        reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-007")]),
        reply("PUMP-007 is fine."),  # the model's own answer: not shown
        reply(json.dumps({"claims": [{"record": "E1"}], "note": "It needs attention"})),  # E1: the pump's zone
    ]
    with FakeOllamaServer(steps).running() as server:
        settings = tmp_path / "appsettings.json"
        body = {
            "Qdrant": {"Path": ":memory:"},
            "Ollama": {"Host": server.host},
            "Agent": {"StructuredAnswers": True},
        }
        settings.write_text(json.dumps(body))
        args = ["--settings", str(settings), "eval", "--provider", "ollama", "--id", "single-details-007", "--k", "1"]
        result = CliRunner().invoke(cli_app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["structured_answers"] is True
    [trial] = report["trials"]
    assert trial["answer"].startswith("It needs attention.\nPUMP-007: vibration 9.4 mm/s, ISO 10816-3 zone D")
    assert trial["fact_recall"] == 1.0 and trial["grounded"] is True
    assert trial["corrections"] == ["structured_answer: written"]
    asked = server.requests[-1]
    assert asked["format"]["properties"]["claims"]["items"]["properties"]["record"]["enum"][0] == "E1"
    assert "E1 PUMP-007 vibration zone D (9.4 mm/s)" in asked["messages"][-1]["content"]
