"""Whether the installed llama.cpp build can run the model on this machine, asked in a child process.

llama-cpp-python is compiled on the machine that installs it, for every instruction the CPU advertises. Some
hypervisors advertise AMX tiles and then trap them: that build dies by SIGILL on its first batch of prompt
tokens (a single generated token still works), and a crash in process would end the operator's chat without a
word. `self_test` loads the model and reads one batch in a child process instead, so the failure becomes a
sentence saying how to fix it (`make local` builds without AMX). `self_test_verdict` runs it once per model file
and llama.cpp build and remembers the verdict beside the model (``<model>.self-test.json``), so choosing the
local provider costs the child's few seconds only the first time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import platform
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REBUILD_HINT", "SELF_TEST_TOKENS", "Verdict", "self_test", "self_test_verdict"]

SELF_TEST_TOKENS = 48
_CHILD = f"""
import os, sys, llama_cpp
llama = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_batch=64, n_threads=int(sys.argv[2]), verbose=False)
llama.eval(llama.tokenize(b"Pump PUMP-007 at Station-C reports 9.4 mm/s. " * 8, add_bos=False)[:{SELF_TEST_TOKENS}])
print("ok", flush=True)
os._exit(0)  # the verdict is given; nothing at teardown can change it
"""
# Signals that say something about the moment (the machine's memory, an operator), not about the build.
_MOMENTARY_SIGNALS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
REBUILD_HINT = (
    "an instruction this CPU or VM does not allow (often AMX tiles under a hypervisor that advertises them): "
    "reinstall llama-cpp-python without them with `make local`"
)


@dataclass(frozen=True)
class Verdict:
    """What the child process showed: ``failure`` is None when it read the batch.

    ``lasting``: the verdict is about the build (a crash, an error), not the moment (a timeout, no interpreter).
    """

    failure: str | None
    lasting: bool = True


def self_test(path: Path, *, threads: int, timeout: float = 180.0, python: str = sys.executable) -> Verdict:
    """Load the model at ``path`` and read one batch of `SELF_TEST_TOKENS` tokens in a child process."""
    try:
        done = subprocess.run(
            [python, "-c", _CHILD, str(path), str(threads)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Verdict(f"llama.cpp did not read a batch of {SELF_TEST_TOKENS} tokens within {timeout:g} s", False)
    except OSError as exc:
        return Verdict(f"could not start {python!r} for the llama.cpp self-test: {exc.strerror or exc}", False)
    if done.stdout.strip().endswith("ok"):
        return Verdict(None)
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    if done.returncode == -signal.SIGILL:
        return Verdict(f"llama.cpp was killed by SIGILL reading a batch of {SELF_TEST_TOKENS} tokens: {REBUILD_HINT}")
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        return Verdict(
            f"llama.cpp was killed by {name} reading a batch of {SELF_TEST_TOKENS} tokens; it last wrote: {last}",
            lasting=-done.returncode not in _MOMENTARY_SIGNALS,
        )
    return Verdict(f"llama.cpp failed to read a batch of {SELF_TEST_TOKENS} tokens (exit {done.returncode}): {last}")


def self_test_verdict(
    path: Path, *, threads: int, run: Callable[[Path], Verdict] | None = None, fresh: bool = False
) -> Verdict:
    """`self_test`'s verdict for this model file and llama.cpp build: remembered beside the model, else run now.

    ``fresh`` runs it even when a verdict is remembered (`pumpops model status`). A lasting verdict is saved,
    best effort (a read-only folder only means the child runs each time); a passing one is saved too.
    """
    record = path.with_name(path.name + ".self-test.json")
    key = _fingerprint(path)
    if not fresh:
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            saved = json.loads(record.read_text(encoding="utf-8"))
            if saved.get("fingerprint") == key:
                failure = saved.get("failure")
                return Verdict(failure if isinstance(failure, str) else None)
    verdict = (run or (lambda p: self_test(p, threads=threads)))(path)
    if verdict.lasting:
        with contextlib.suppress(OSError):
            record.write_text(json.dumps({"fingerprint": key, "failure": verdict.failure}), encoding="utf-8")
    return verdict


def _fingerprint(path: Path) -> list[object]:
    """The machine, the model file and the llama.cpp libraries: another CPU, a rebuild or a reinstall changes it."""
    parts: list[object] = [_cpu()]
    with contextlib.suppress(OSError):
        stat = path.stat()
        parts.append([path.name, stat.st_size, stat.st_mtime_ns])
    spec = importlib.util.find_spec("llama_cpp")
    folders = (spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        with contextlib.suppress(OSError):
            for library in sorted((Path(folder) / "lib").iterdir()):
                stat = library.stat()
                parts.append([library.name, stat.st_size, stat.st_mtime_ns])
    return parts


def _cpu() -> str:
    """What the CPU offers, as the kernel reports it (a folder copied to another VM must be tested again)."""
    flags = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("flags"):
                flags = line.partition(":")[2].strip()
                break
    return hashlib.sha256(f"{platform.machine()} {platform.processor()} {flags}".encode()).hexdigest()[:16]
