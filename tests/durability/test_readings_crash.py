"""Crash durability of batched reading writes: SIGKILL a writer mid-stream; every batch is all or nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

from storage import open_database
from tests.durability.readings_child import BATCH_SECONDS, BATCH_SPACING, PUMPS, T0
from tests.durability.support import REPO
from twin.models import SensorType
from twin.sample_fleet import load_sample_fleet

SEEN_BEFORE_KILL = 3
PER_BATCH = BATCH_SECONDS * len(PUMPS) * len(SensorType)


def run_until_killed(database: str | Path, log: Path) -> set[int]:
    """Start the writer, SIGKILL it right after it reported `SEEN_BEFORE_KILL` commits; the batches it reported."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    with log.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.durability.readings_child", str(database)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        committed: set[int] = set()
        assert child.stdout is not None
        for line in child.stdout:  # the child writes batch after batch: the kill lands inside the next one
            committed.add(json.loads(line)["batch"])
            if len(committed) >= SEEN_BEFORE_KILL:
                os.kill(child.pid, signal.SIGKILL)
                break
        child.wait(timeout=60)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL, log.read_text()[-2000:]
    return committed


async def test_a_writer_killed_mid_batch_leaves_every_batch_whole_and_the_file_sound(
    tmp_path: Path, database_target: str | Path
) -> None:
    """On either backend; the file's own integrity check is SQLite's (a PostgreSQL server keeps its own files)."""
    db = await open_database(database_target)
    await load_sample_fleet(db)
    await db.close()
    committed = run_until_killed(database_target, tmp_path / "child.log")
    db = await open_database(database_target)
    try:
        if isinstance(database_target, Path):
            check = await db.fetch_one("PRAGMA integrity_check")
            assert check is not None and check[0] == "ok"
        rows = await db.fetch_all("SELECT recorded_at FROM readings WHERE recorded_at >= '2030'")
        per_batch = Counter(
            int((datetime.fromisoformat(row["recorded_at"].replace("Z", "+00:00")) - T0).total_seconds())
            // BATCH_SPACING
            for row in rows
        )
        assert committed <= set(per_batch), "a batch reported committed is missing"
        assert {k: n for k, n in per_batch.items() if n != PER_BATCH} == {}, "a batch was written in part"
        # Each sensor's latest value is its newest reading: the sensors' update committed with its batch.
        stale = await db.fetch_all(
            "SELECT s.sensor_id FROM sensors s WHERE s.latest_at != "
            "(SELECT MAX(recorded_at) FROM readings r WHERE r.sensor_id = s.sensor_id)"
        )
        assert [row["sensor_id"] for row in stale] == []
    finally:
        await db.close()
