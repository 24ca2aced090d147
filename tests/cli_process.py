"""Run the `pumpops` CLI of this checkout as a real process, with a bounded wait.

The installed `pumpops` script imports whatever the shared environment was installed from; the
tests here run this checkout's entry point instead, with its folder first on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI_CODE = "from doors.cli.main import main; main()"
CLI_TIMEOUT_S = 30
"""An upper bound, never a synchronisation wait: the CLI imports in about 3 s on a loaded machine; a hang never ends."""


def run_pumpops(settings: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``pumpops --settings <settings> <args>`` in the settings file's folder, PUMPOPS_* variables cleared.

    Raises:
        subprocess.TimeoutExpired: the command ran past `CLI_TIMEOUT_S` (a hang).
    """
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), clean.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", CLI_CODE, "--settings", str(settings), *args],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env={**clean, "COLUMNS": "200", **(env or {})},
        cwd=settings.parent,
        check=False,
    )
