"""A process that writes batches of live readings until it is killed (for the crash test of batched writing).

Run as ``python -m tests.durability.readings_child DB`` (an SQLite file or a ``postgresql://`` URL). Batch ``k``
holds `BATCH_SECONDS` seconds of readings of every sensor, starting at ``T0 + k * BATCH_SPACING`` seconds; after
each commit it prints ``{"event": "committed", "batch": k}``. It stops by itself after `MAX_BATCHES` (the parent
kills far sooner).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta

from storage import open_database
from twin.models import SensorType
from twin.readings import Reading, ReadingStore

T0 = datetime(2030, 1, 1, tzinfo=UTC)
PUMPS = [f"PUMP-{n:03d}" for n in range(1, 9)]
BATCH_SECONDS = 100  # x 40 sensors = 4000 readings a batch
BATCH_SPACING = 1000
MAX_BATCHES = 2000


def batch(k: int) -> list[Reading]:
    start = T0 + timedelta(seconds=k * BATCH_SPACING)
    return [
        Reading(pump, sensor, float(k), start + timedelta(seconds=s), "crash-test")
        for s in range(BATCH_SECONDS)
        for pump in PUMPS
        for sensor in SensorType
    ]


async def main(path: str) -> None:
    db = await open_database(path)
    store = ReadingStore(db)
    for k in range(MAX_BATCHES):
        await store.store(batch(k))
        print(json.dumps({"event": "committed", "batch": k}), flush=True)
    await db.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
