"""`pumpops` end to end in a subprocess: db init, tools list, tools call, config show, and clean errors."""

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from kernel_setup.local_identity import os_user
from storage.urls import mask_url
from tests.postgres_server import BACKENDS, PostgresServer, database_section, fresh_database, query

PUMPOPS = Path(sys.executable).parent / "pumpops"


def run_cli(settings_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    return subprocess.run(
        [str(PUMPOPS), "--settings", str(settings_file), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "COLUMNS": "200"},
        cwd=settings_file.parent,
        check=False,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def cli_target(request: pytest.FixtureRequest) -> AsyncIterator[str | Path]:
    """One registry for the module's tests, on each backend in turn (`database_target`, but initialised once)."""
    if request.param == "sqlite":
        yield Path("state/cli.db")
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    async with fresh_database(server) as url:
        yield url


@pytest.fixture(scope="module")
def cli_settings(tmp_path_factory: pytest.TempPathFactory, cli_target: str | Path) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "appsettings.json"
    identity = {"Roles": {os_user(): ["auditor"]}, "AllowAssertedNames": True}
    database = database_section(cli_target, "state/cli.db")
    path.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}, "Identity": identity}))
    first = run_cli(path, "db", "init", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["sample_loaded"] is True
    return path


def test_db_init_is_idempotent(cli_settings: Path, cli_target: str | Path) -> None:
    again = run_cli(cli_settings, "db", "init", "--json")
    assert again.returncode == 0
    # The SQLite file's path, resolved beside the settings file; on PostgreSQL the URL, its password masked.
    shown = mask_url(cli_target) if isinstance(cli_target, str) else str(cli_settings.parent / "state" / "cli.db")
    assert json.loads(again.stdout) == {
        "database": shown,
        "sample_loaded": False,
        "pumps": 8,
    }


def test_tools_call_prints_the_result_json(cli_settings: Path) -> None:
    result = run_cli(cli_settings, "tools", "call", "assets.get_pump_details", "pump_id=PUMP-007", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["pump_id"] == "PUMP-007" and data["vibration_zone"]["zone"] == "D"


def test_tools_call_accepts_the_dash_form_and_typed_arguments(cli_settings: Path) -> None:
    result = run_cli(
        cli_settings,
        "tools",
        "call",
        "sensors-get_sensor_trend",
        "pump_id=PUMP-004",
        "sensor_type=vibration",
        "days=14",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["window_days"] == 14


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("assets.nope",), "Unknown function 'assets.nope'"),
        (("assets.get_pump_details",), "needs 'pump_id'"),
        (("assets.get_pump_details", "pump_id=PUMP-999"), "No pump found with id 'PUMP-999'"),
        (("assets.list_pumps", "status=running"), "use one of online, offline, maintenance"),
        (("assets.list_pumps", "colour=red"), "has no parameter(s) 'colour'"),
        (("assets.list_pumps", "status"), "is not key=value"),
    ],
)
def test_bad_calls_exit_non_zero_with_a_clear_message_and_no_traceback(
    cli_settings: Path, args: tuple[str, ...], fragment: str
) -> None:
    result = run_cli(cli_settings, "tools", "call", *args)
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_tools_list_json_is_the_schema_the_model_sees(cli_settings: Path) -> None:
    result = run_cli(cli_settings, "tools", "list", "--json")
    assert result.returncode == 0, result.stderr
    names = {d["function"]["name"] for d in json.loads(result.stdout)}
    assert {
        "assets-get_system_summary",
        "assets-list_pumps",
        "assets-get_pump_details",
        "alarms-list_alarms",
        "sensors-get_sensor_readings",
        "sensors-get_sensor_trend",
    } <= names


def test_config_show_masks_secrets(cli_settings: Path) -> None:
    env_settings = cli_settings.parent / "secret.json"
    env_settings.write_text(json.dumps({"Qdrant": {"ApiKey": "hunter2"}}))
    result = run_cli(env_settings, "config", "show", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["Qdrant"]["ApiKey"] == "********" and "hunter2" not in result.stdout


def test_an_invalid_settings_file_exits_with_the_key_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"Agent": {"MaxModelCalls": -1}}))
    result = run_cli(bad, "config", "show")
    assert result.returncode == 2
    assert "Agent.MaxModelCalls" in result.stderr and "Traceback" not in result.stderr


def test_tools_call_is_audited_as_the_os_user_with_an_allowed_as_name_marked_asserted(cli_settings: Path) -> None:
    run_cli(cli_settings, "tools", "call", "assets.list_pumps", "status=running", "--as", "alice")
    run_cli(cli_settings, "tools", "call", "assets.nope", "--as", "alice")
    run_cli(cli_settings, "tools", "call", "assets.get_system_summary", "--as", "alice")
    tail = run_cli(cli_settings, "audit", "tail", "-n", "3", "--json")
    assert tail.returncode == 0, tail.stderr
    rows = json.loads(tail.stdout)
    asserted = f"{os_user()} (asserted: alice)"  # Identity.AllowAssertedNames: a label beside the OS user
    assert [(r["function"], r["outcome"], r["principal"]) for r in rows] == [
        ("assets-list_pumps", "rejected", asserted),
        ("assets.nope", "rejected", asserted),
        ("assets-get_system_summary", "ok", asserted),
    ]
    assert run_cli(cli_settings, "audit", "verify").returncode == 0


def test_as_another_name_is_refused_saying_how_to_allow_it_when_asserted_names_are_off(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = tmp_path / "appsettings.json"
    database = database_section(database_target, "off.db")
    settings.write_text(json.dumps({"Database": database, "Qdrant": {"Path": ":memory:"}}))
    refused = run_cli(settings, "tools", "call", "assets.get_system_summary", "--as", "alice")
    assert refused.returncode == 2 and refused.stdout == ""
    assert "Identity.AllowAssertedNames" in refused.stderr and os_user() in refused.stderr
    own = run_cli(settings, "tools", "call", "assets.get_system_summary", "--as", os_user().upper(), "--json")
    assert own.returncode == 0, own.stderr  # naming the OS user itself asserts nothing
    assert query(settings, "SELECT principal, outcome FROM audit_log WHERE door = 'cli'") == [
        {"principal": os_user(), "outcome": "ok"}
    ]


def test_errors_print_square_brackets_verbatim_not_as_console_markup(cli_settings: Path) -> None:
    result = run_cli(cli_settings, "tools", "call", "assets.get_pump_details", "pump_id=[bold]PUMP-7")
    assert result.returncode != 0
    assert "'[bold]PUMP-7'" in result.stderr and "PUMP-007" in result.stderr


def test_model_status_says_how_to_install_an_absent_model_without_running_it(cli_settings: Path) -> None:
    done = run_cli(cli_settings, "model", "status", "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["installed"] is False and status["usable"] is False
    assert status["self_test"] is None  # nothing to run
    assert "pumpops model install" in status["detail"]
