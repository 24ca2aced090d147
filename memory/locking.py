"""Who holds a Qdrant local-mode folder: an owner note we write, and the kernel's lock table where there is one.

Qdrant local mode takes an exclusive ``flock`` on ``<folder>/.lock``: one process at a time. When
opening fails, `describe_holder` names the process that has it, so the operator knows what to stop.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

OWNER_FILE = "pumpops-owner.json"
LOCK_FILE = ".lock"


def write_owner(folder: Path) -> None:
    """Record this process as the folder's holder (best effort; the lock itself is Qdrant's)."""
    note = {
        "pid": os.getpid(),
        "command": _this_command(),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        (folder / OWNER_FILE).write_text(json.dumps(note), encoding="utf-8")
    except OSError:
        pass


def clear_owner(folder: Path) -> None:
    """Remove the owner note if this process wrote it."""
    path = folder / OWNER_FILE
    note = _read_owner(path)
    if note is not None and note.get("pid") == os.getpid():
        try:
            path.unlink()
        except OSError:
            pass


def describe_holder(folder: Path) -> str:
    """A phrase naming the process holding ``folder``, e.g. ``"process 4242 (pumpops mcp) since 2025-..."``."""
    note = _read_owner(folder / OWNER_FILE)
    pid = _pid_from_lock_table(folder / LOCK_FILE)
    noted_pid = note.get("pid") if note is not None else None
    if pid is None and isinstance(noted_pid, int):
        pid = noted_pid
    if pid is None:
        return "another process (not recorded)"
    command = _command_of(pid) or (str(note.get("command")) if note and note.get("pid") == pid else "")
    since = f" since {note['since']}" if note and note.get("pid") == pid and note.get("since") else ""
    shown = f" ({command})" if command else ""
    return f"process {pid}{shown}{since}"


def is_locked(folder: Path) -> bool:
    """True when another process (or client) holds Qdrant's lock on ``folder``.

    Probing first spares a failed Qdrant open, which leaves its lock file handle open until collected.
    """
    lock_file = folder / LOCK_FILE
    if not lock_file.is_file():
        return False
    import portalocker

    try:
        with lock_file.open("r+") as handle:
            try:
                portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
            except portalocker.exceptions.LockException:
                return True
            portalocker.unlock(handle)
    except OSError:
        return False
    return False


def _this_command() -> str:
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else []
    return " ".join(" ".join(argv).split())[:120]


def _read_owner(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pid_from_lock_table(lock_file: Path) -> int | None:
    """Linux: find the pid holding a flock on ``lock_file`` in /proc/locks (None elsewhere or when absent)."""
    try:
        inode = lock_file.stat().st_ino
        lines = Path("/proc/locks").read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        # e.g. "3: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF"
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        device_inode = fields[5].rsplit(":", 1)
        if len(device_inode) == 2 and device_inode[1] == str(inode) and fields[4].isdigit():
            return int(fields[4])
    return None


def _command_of(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    parts = [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]
    if not parts:
        return ""
    # Show the program, not the interpreter path: "python -m pytest ..." or "pumpops mcp".
    parts[0] = Path(parts[0]).name
    if len(parts) > 1 and parts[0].startswith("python"):
        parts[1] = Path(parts[1]).name if parts[1].endswith((".py", "pumpops")) else parts[1]
    return " ".join(" ".join(parts).split())[:120]
