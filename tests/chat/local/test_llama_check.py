"""The llama.cpp self-test: a build this machine traps is a sentence with the fix, run once per build."""

import json
from pathlib import Path

import pytest

from chat.local import llama_check
from chat.local.llama_check import Verdict, self_test, self_test_verdict


def interpreter(folder: Path, body: str) -> str:
    """A stand-in for the Python that runs the self-test's child: a shell script doing ``body``."""
    script = folder / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_the_self_test_tells_a_build_this_machine_traps_from_other_failures(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    assert self_test(model, threads=2, python=interpreter(tmp_path, "echo ok")) == Verdict(None)
    trapped = self_test(model, threads=2, python=interpreter(tmp_path, "kill -ILL $$"))
    assert trapped.lasting and "killed by SIGILL" in (trapped.failure or "") and "make local" in (trapped.failure or "")
    crashed = self_test(model, threads=2, python=interpreter(tmp_path, "echo 'bad things' >&2; kill -SEGV $$"))
    assert crashed.lasting and (crashed.failure or "").endswith(
        "killed by SIGSEGV reading a batch of 48 tokens; it last wrote: bad things"
    )
    failed = self_test(model, threads=2, python=interpreter(tmp_path, "echo 'invalid magic' >&2; exit 3"))
    assert failed == Verdict("llama.cpp failed to read a batch of 48 tokens (exit 3): invalid magic")
    slow = self_test(model, threads=2, timeout=0.3, python=interpreter(tmp_path, "sleep 5"))
    assert slow == Verdict("llama.cpp did not read a batch of 48 tokens within 0.3 s", lasting=False)
    killed = self_test(model, threads=2, python=interpreter(tmp_path, "kill -KILL $$"))  # e.g. out of memory
    assert not killed.lasting and "killed by SIGKILL" in (killed.failure or "")
    done_then_crashed = self_test(model, threads=2, python=interpreter(tmp_path, "echo ok; kill -SEGV $$"))
    assert done_then_crashed == Verdict(None)  # the batch was read; teardown does not matter
    missing = self_test(model, threads=2, python=str(tmp_path / "nowhere" / "python"))
    assert not missing.lasting and (missing.failure or "").startswith("could not start")


def test_another_cpu_is_another_fingerprint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    here = llama_check._fingerprint(model)
    monkeypatch.setattr(llama_check.platform, "processor", lambda: "another CPU")
    assert llama_check._fingerprint(model) != here


def test_a_verdict_is_remembered_for_its_model_file_and_build_until_either_changes(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    runs: list[Path] = []

    def trapped(path: Path) -> Verdict:
        runs.append(path)
        return Verdict("llama.cpp was killed by SIGILL")

    assert self_test_verdict(model, threads=2, run=trapped).failure == "llama.cpp was killed by SIGILL"
    assert self_test_verdict(model, threads=2, run=trapped).failure == "llama.cpp was killed by SIGILL"
    assert runs == [model]  # remembered beside the model
    assert json.loads((tmp_path / "m.gguf.self-test.json").read_text())["failure"] == "llama.cpp was killed by SIGILL"
    assert self_test_verdict(model, threads=2, run=lambda p: Verdict(None), fresh=True) == Verdict(None)
    assert self_test_verdict(model, threads=2, run=trapped) == Verdict(None) and len(runs) == 1  # the fresh one kept
    model.write_bytes(b"gguf, reinstalled")
    assert self_test_verdict(model, threads=2, run=trapped).failure is not None and len(runs) == 2


def test_a_failure_of_the_moment_is_not_remembered_and_a_corrupt_record_is_run_again(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    slow = Verdict("llama.cpp did not read a batch of 48 tokens within 180 s", lasting=False)
    assert self_test_verdict(model, threads=2, run=lambda p: slow) == slow
    assert not (tmp_path / "m.gguf.self-test.json").exists()
    (tmp_path / "m.gguf.self-test.json").write_text("{not json")
    assert self_test_verdict(model, threads=2, run=lambda p: Verdict(None)) == Verdict(None)
    assert self_test_verdict(model, threads=2, run=lambda p: Verdict("never asked")) == Verdict(None)


def test_the_local_provider_is_refused_with_the_self_tests_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chat import provider
    from kernel_setup.settings import Settings

    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    settings = Settings.model_validate({"LocalModel": {"Path": str(model)}})
    monkeypatch.setattr(provider, "llama_available", lambda: True)
    monkeypatch.setattr(
        llama_check, "self_test", lambda path, threads: Verdict(f"llama.cpp was killed by SIGILL ({threads} threads)")
    )
    problem = provider.local_model_problem(settings)
    assert (
        problem
        == f"the local model cannot run here: llama.cpp was killed by SIGILL ({settings.local_model.threads} threads)."
    )
