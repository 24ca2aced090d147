"""Settings: defaults, lookup order, env overrides, relative paths, and clear errors."""

import json
import os
from pathlib import Path

import pytest

from kernel_setup.errors import SettingsError
from kernel_setup.settings import ChatProvider, PolicyDecision, Settings
from kernel_setup.settings_loading import MAX_JSON_DEPTH, load_settings
from tests.cli_process import run_pumpops

ROOT = Path(__file__).resolve().parents[2]


def test_the_root_appsettings_file_lists_every_default() -> None:
    shipped = json.loads((ROOT / "appsettings.json").read_text(encoding="utf-8"))
    assert shipped == Settings().to_display()


def test_explicit_path_wins_over_env_and_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = tmp_path / "explicit.json"
    explicit.write_text(json.dumps({"Ollama": {"ModelId": "explicit"}}))
    from_env = tmp_path / "env.json"
    from_env.write_text(json.dumps({"Ollama": {"ModelId": "env"}}))
    (tmp_path / "appsettings.json").write_text(json.dumps({"Ollama": {"ModelId": "cwd"}}))
    monkeypatch.chdir(tmp_path)
    env = {"PUMPOPS_SETTINGS": str(from_env)}
    assert load_settings(explicit, env=env).ollama.model_id == "explicit"
    assert load_settings(None, env=env).ollama.model_id == "env"
    assert load_settings(None, env={}).ollama.model_id == "cwd"


def test_built_in_defaults_apply_when_no_file_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings(None, env={})
    assert settings.source == "built-in defaults"
    assert settings.database_path == tmp_path / "data" / "pumpops.db"


def test_relative_paths_resolve_against_the_settings_files_folder(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "s.json").write_text(json.dumps({"Database": {"Path": "db/x.db"}}))
    settings = load_settings(folder / "s.json", env={})
    assert settings.database_path == folder.resolve() / "db" / "x.db"


def test_environment_overrides_are_case_insensitive_and_typed(settings_file: Path) -> None:
    env = {
        "PUMPOPS_OLLAMA__HOST": "http://10.0.0.5:11434",
        "pumpops_agent__maxmodelcalls": "9",
        "PUMPOPS_Approval__AllowSelfApproval": "true",
        "PUMPOPS_APPROVAL__MAXPENDINGPERPRINCIPAL": "5",
        "PUMPOPS_Chat__Provider": "local",
        "PUMPOPS_Approval__Policy__work_orders__create_work_order": "deny",
    }
    settings = load_settings(settings_file, env=env)
    assert settings.ollama.host == "http://10.0.0.5:11434"
    assert settings.agent.max_model_calls == 9
    assert settings.approval.allow_self_approval is True
    assert settings.approval.max_pending_per_principal == 5
    assert settings.chat.provider is ChatProvider.LOCAL
    assert settings.approval.policy["work_orders"]["create_work_order"] is PolicyDecision.DENY


def test_unknown_key_in_the_file_is_rejected_naming_the_key_and_allowed_keys(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"Ollama": {"Hots": "http://x"}}))
    with pytest.raises(SettingsError) as info:
        load_settings(path, env={})
    assert "Ollama.Hots" in str(info.value)
    assert "Host" in str(info.value) and "ModelId" in str(info.value)


def test_unknown_section_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"Olama": {}}))
    with pytest.raises(SettingsError, match="Olama"):
        load_settings(path, env={})


@pytest.mark.parametrize(
    ("var", "fragment"),
    [
        ("PUMPOPS_Olama__Host", "unknown section 'Olama'"),
        ("PUMPOPS_Ollama__Hots", "unknown key 'Hots'"),
        ("PUMPOPS_Ollama", "PUMPOPS_<Section>__<Key>"),
    ],
)
def test_unknown_environment_keys_are_rejected(settings_file: Path, var: str, fragment: str) -> None:
    with pytest.raises(SettingsError, match=fragment.replace("<", ".").replace(">", ".")):
        load_settings(settings_file, env={var: "x"})


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"Agent": {"MaxModelCalls": 0}}, "Agent.MaxModelCalls"),
        ({"Chat": {"Provider": "openai"}}, "Chat.Provider"),
        ({"Ollama": {"Host": "localhost:11434"}}, "Ollama.Host"),
        ({"Mcp": {"Port": 70000}}, "Mcp.Port"),
        ({"Mcp": {"AllowedHosts": ["https://pumps.example.com"]}}, "Mcp.AllowedHosts"),
        ({"Mcp": {"AllowedHosts": ["*"]}}, "Mcp.AllowedHosts"),
        ({"Mcp": {"AllowedOrigins": ["ops.example.com"]}}, "Mcp.AllowedOrigins"),
        ({"Mcp": {"AllowedOrigins": ["https://ops.example.com/app"]}}, "Mcp.AllowedOrigins"),
        ({"Approval": {"Policy": {"work_orders": {"create_work_order": "maybe"}}}}, "Approval.Policy"),
        ({"Approval": {"MaxPendingPerPrincipal": 0}}, "Approval.MaxPendingPerPrincipal"),
    ],
)
def test_bad_values_fail_naming_the_key(tmp_path: Path, data: dict[str, object], key: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SettingsError, match=key.replace(".", r"\.")):
        load_settings(path, env={})


def test_mcp_allowed_hosts_and_origins_read_a_comma_separated_environment_value(settings_file: Path) -> None:
    env = {
        "PUMPOPS_Mcp__AllowedHosts": "pumps.example.com, PUMPS.example.com:8443",
        "PUMPOPS_Mcp__AllowedOrigins": '["https://ops.example.com/"]',
    }
    mcp = load_settings(settings_file, env=env).mcp
    assert mcp.allowed_hosts == ("pumps.example.com", "pumps.example.com:8443")
    assert mcp.allowed_origins == ("https://ops.example.com",)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"Ollama": {\n  "Host": }\n}')
    with pytest.raises(SettingsError, match="line 2"):
        load_settings(path, env={})


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path / "nope.json", env={})


def test_secrets_are_masked_for_display(settings_file: Path) -> None:
    settings = load_settings(settings_file, env={"PUMPOPS_Qdrant__ApiKey": "s3cret"})
    assert settings.qdrant.api_key is not None
    assert settings.qdrant.api_key.get_secret_value() == "s3cret"
    shown = json.dumps(settings.to_display())
    assert "s3cret" not in shown and "********" in shown


def test_settings_are_immutable(settings: Settings) -> None:
    with pytest.raises(ValueError, match="frozen"):
        settings.ollama.host = "http://elsewhere"


def test_process_environment_is_used_by_default(settings_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(os.environ, "PUMPOPS_Ollama__ModelId", "from-process-env")
    assert load_settings(settings_file).ollama.model_id == "from-process-env"


@pytest.mark.parametrize(("opening", "closing"), [("[", "]"), ('{"a":', "}")], ids=["arrays", "objects"])
def test_a_settings_file_nested_100000_deep_is_a_settings_error_not_a_recursion_error(
    tmp_path: Path, opening: str, closing: str
) -> None:
    path = tmp_path / "deep.json"
    path.write_text("{" + '"Agent":' + opening * 100_000 + "1" + closing * 100_000 + "}")
    with pytest.raises(SettingsError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert f"deeper than {MAX_JSON_DEPTH} levels" in message and "line 1" in message
    assert "\n" not in message and '{"Approval": {"Policy"' in message


def test_json_nested_exactly_to_the_limit_still_reaches_validation(tmp_path: Path) -> None:
    path = tmp_path / "limit.json"
    path.write_text('{"Agent":' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}")
    with pytest.raises(SettingsError, match="Invalid settings"):
        load_settings(path, env={})


def test_brackets_inside_json_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    path = tmp_path / "brackets.json"
    path.write_text(json.dumps({"Ollama": {"ModelId": '[{\\"' * 100 + "qwen"}}))
    assert load_settings(path, env={}).ollama.model_id.endswith("qwen")


def test_a_deeply_nested_environment_value_is_a_settings_error_naming_the_variable(settings_file: Path) -> None:
    env = {"PUMPOPS_Approval__Policy": "[" * 100_000 + "]" * 100_000}
    with pytest.raises(SettingsError, match="Environment variable 'PUMPOPS_Approval__Policy' nests JSON deeper"):
        load_settings(settings_file, env=env)


def test_the_cli_refuses_a_deeply_nested_settings_file_with_exit_2_and_one_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    result = run_pumpops(path, "config", "show")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Settings file") and "deeper than 32" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


def test_the_cli_prints_each_settings_problem_on_a_line_of_its_own(tmp_path: Path) -> None:
    settings = tmp_path / "appsettings.json"
    settings.write_text(json.dumps({"Databse": {}, "Agent": {"MaxModelCalls": "many"}}))
    shown = run_pumpops(settings, "config", "show")
    assert shown.returncode == 2
    lines = shown.stderr.strip().splitlines()
    assert lines[0].startswith("error: Invalid settings (from ") and "\\x0a" not in shown.stderr
    assert sorted(line.split(":")[0].strip() for line in lines[1:]) == ["- Agent.MaxModelCalls", "- Databse"]
