"""Live telemetry bench: the write path against a bare executemany, MQTT ingestion rate, publish-to-stored latency.

1. Write path: the same prebuilt readings go (a) through the service's `Batcher` and `ReadingStore` (a write
   starts at ``Telemetry.BatchSize`` held and takes all held: group commit; duplicate and latest-value rules
   included), (a') the same with the alarm rules hearing each stored batch as the service wires them, (b) through
   one bare ``sqlite3`` ``executemany`` of the same rows into an identical database in one transaction (the
   baseline), and (c) bare again, one transaction per ``BatchSize`` rows; ``--rounds`` rounds interleaved, each
   into fresh databases; prints the rates and the ratio (a)/(b) per round and its median (target >= 0.7x).
2. MQTT ingestion: a broker (Debian's mosquitto when installed, else amqtt) and a publisher, each in its own
   process on 127.0.0.1, and the service's MQTT
   source, batcher and store in this one; ``--messages`` QoS-1 messages published as fast as the broker takes
   them; prints readings stored per second from the first message stored to the last (target >= 5,000/s on 2 cores).
3. Latency: the publisher paced at ``--rate`` readings/s (default 1,000) for ``--seconds``; each reading's time from
   publish to stored (its batch committed); prints p50/p95 (target p95 < 1 s).

Readings carry distinct whole-second timestamps (the registry keys readings on sensor and second). Figures only,
not a test.

Run:   .venv/bin/python bench/telemetry_bench.py
Smoke: .venv/bin/python bench/telemetry_bench.py --readings 20000 --messages 5000 --seconds 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kernel_setup.plant_settings import AlarmSettings, MqttSourceSettings
from storage import Database, open_database
from telemetry.batching import Batcher
from telemetry.sources.mqtt import MqttSource
from twin.alarm_rules import AlarmRules
from twin.models import SensorType
from twin.readings import Reading, ReadingStore, StoredBatch
from twin.sample_fleet import load_sample_fleet
from twin.timestamps import format_ts

BASE = datetime(2026, 1, 1, tzinfo=UTC)
TOPIC = "bench/plant/{pump}/{sensor}"
_BARE_INSERT = "INSERT INTO readings (sensor_id, recorded_at, value) VALUES (?, ?, ?)"

BROKER = """
import asyncio, sys
from amqtt.broker import Broker
async def main():
    broker = Broker({"listeners": {"default": {"type": "tcp", "bind": "127.0.0.1:%s"}},
                     "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}})
    await broker.start()
    print("ready", flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""

# argv: port, count, rate (0 = as fast as the broker takes them), sensors as pump:sensor,...; prints one line per
# message as "index publish_time" when paced (the latency run reads them back).
PUBLISHER = """
import asyncio, json, sys, time
from datetime import UTC, datetime, timedelta
import aiomqtt
import logging
logging.disable(logging.WARNING)  # aiomqtt warns at each publish beyond 10 in flight: the point of this run
port, count, rate = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
sensors = [s.split(":") for s in sys.argv[4].split(",")]
base = datetime(2026, 1, 1, tzinfo=UTC)
async def main():
    async with aiomqtt.Client("127.0.0.1", port, identifier="bench-publisher", max_inflight_messages=200) as client:
        start = time.monotonic()
        window = []
        for i in range(count):
            pump, sensor = sensors[i % len(sensors)]
            at = (base + timedelta(seconds=i // len(sensors))).isoformat()
            body = json.dumps({"value": float(i), "timestamp": at}).encode()
            if rate:
                due = start + i / rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                sys.stdout.write(f"{i} {time.time()}\\n")
                await client.publish(f"bench/plant/{pump}/{sensor}", body, qos=1)
            else:
                window.append(client.publish(f"bench/plant/{pump}/{sensor}", body, qos=1))
                if len(window) == 200:
                    await asyncio.gather(*window)
                    window = []
        await asyncio.gather(*window)
    sys.stdout.flush()
asyncio.run(main())
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def poll(condition: Callable[[], bool], seconds: float) -> None:
    """Check ``condition`` every 50 ms until it holds or ``seconds`` pass."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def sample_db(folder: Path, name: str) -> tuple[Database, list[tuple[str, SensorType]]]:
    db = await open_database(folder / name)
    await load_sample_fleet(db)
    rows = await db.fetch_all("SELECT pump_id, sensor_type FROM sensors ORDER BY pump_id, sensor_type")
    return db, [(row["pump_id"], SensorType(row["sensor_type"])) for row in rows]


def readings(sensors: list[tuple[str, SensorType]], count: int) -> list[Reading]:
    return [
        Reading(pump, sensor, float(i), BASE + timedelta(seconds=i // len(sensors)), "bench")
        for i, (pump, sensor) in ((i, sensors[i % len(sensors)]) for i in range(count))
    ]


async def service_rate(
    folder: Path, name: str, batch: list[Reading], batch_size: int, *, rules: bool
) -> tuple[float, int]:
    """Put every reading through a `Batcher` and `ReadingStore` (and, with ``rules``, the alarm rules, as the
    service wires them); return the seconds from the first put to the close, and the transactions written."""
    db, _ = await sample_db(folder, name)
    on_stored = None
    if rules:
        alarm = AlarmSettings()
        engine = AlarmRules(
            db,
            raise_after_seconds=alarm.raise_after_seconds,
            clear_after_seconds=alarm.clear_after_seconds,
            deadband_percent=alarm.deadband_percent,
            levels=alarm.levels,
        )
        await engine.start()

        async def observe(stored: StoredBatch) -> None:
            await engine.observe(stored.inserted)

        on_stored = observe
    batcher = Batcher(ReadingStore(db), batch_size=batch_size, flush_seconds=3600, on_stored=on_stored)
    loop = asyncio.create_task(batcher.run())
    start = time.perf_counter()
    for reading in batch:
        await batcher.put(reading)
    await batcher.close()
    seconds = time.perf_counter() - start
    await loop
    await db.close()
    return seconds, batcher.writes


def bare_conn(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    # The registry's own connection settings (storage.database): the comparison is the write path, not the schema.
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


async def write_path(folder: Path, count: int, batch_size: int, rounds: int) -> None:
    """Each round: the service path, the path with the alarm rules, bare in one transaction and bare in batches,
    each into a fresh copy of the sample database; rounds interleave so a busy machine slows all alike."""
    sensors_db, sensors = await sample_db(folder, "sensors.db")
    await sensors_db.close()  # an open database's worker thread would keep the process alive at exit
    batch = readings(sensors, count)
    ids_db, _ = await sample_db(folder, "ids.db")
    ids = {
        (row["pump_id"], row["sensor_type"]): row["sensor_id"]
        for row in await ids_db.fetch_all("SELECT sensor_id, pump_id, sensor_type FROM sensors")
    }
    await ids_db.close()
    rows = [(ids[(r.pump_id, r.sensor_type.value)], format_ts(r.at), r.value) for r in batch]
    print(f"write path, {count:,} readings (Telemetry.BatchSize {batch_size}), {rounds} rounds:")
    ratios: list[float] = []
    rules_ratios: list[float] = []
    for k in range(rounds):
        seconds, writes = await service_rate(folder, f"service-{k}.db", batch, batch_size, rules=False)
        with_rules, _ = await service_rate(folder, f"rules-{k}.db", batch, batch_size, rules=True)
        bare_db, _ = await sample_db(folder, f"bare-{k}.db")
        await bare_db.close()
        conn = bare_conn(folder / f"bare-{k}.db")
        start = time.perf_counter()
        with conn:
            conn.executemany(_BARE_INSERT, rows)
        bare = time.perf_counter() - start
        conn.close()
        split_db, _ = await sample_db(folder, f"split-{k}.db")
        await split_db.close()
        conn = bare_conn(folder / f"split-{k}.db")
        start = time.perf_counter()
        for first in range(0, len(rows), batch_size):  # one transaction per batch_size rows
            with conn:
                conn.executemany(_BARE_INSERT, rows[first : first + batch_size])
        split = time.perf_counter() - start
        conn.close()
        ratios.append(bare / seconds)
        rules_ratios.append(bare / with_rules)
        print(
            f"  round {k + 1}: service {count / seconds:>9,.0f}/s in {writes} transactions"
            f" · with alarm rules {count / with_rules:>9,.0f}/s"
            f" · bare one transaction {count / bare:>9,.0f}/s · bare per {batch_size} {count / split:>9,.0f}/s"
            f" · ratio {bare / seconds:.2f}x (with the rules {bare / with_rules:.2f}x)"
        )
    print(f"  ratio, median of {rounds}: {statistics.median(ratios):.2f}x (service against bare; target >= 0.70x)")
    with_rules_median = statistics.median(rules_ratios)
    print(f"  with the alarm rules, median of {rounds}: {with_rules_median:.2f}x (as `pumpops telemetry` runs)")


async def mqtt_run(folder: Path, port: int, count: int, rate: float, batch_size: int) -> tuple[float, list[float]]:
    """Ingest ``count`` published readings; return the stored rate and, when paced, each reading's latency."""
    db, sensors = await sample_db(folder, f"mqtt-{rate:g}.db")
    stored_at: dict[int, float] = {}
    first: list[float] = []

    async def stored(batch: StoredBatch) -> None:
        now = time.time()
        if not first:
            first.append(time.perf_counter())
        for reading in batch.inserted:
            stored_at[int(reading.value)] = now

    batcher = Batcher(ReadingStore(db), batch_size=batch_size, flush_seconds=0.5, on_stored=stored)
    source = MqttSource(
        MqttSourceSettings(name="bench", host="127.0.0.1", port=port, topic=TOPIC, client_id="bench-source"),
        reconnect_min=0.1,
        reconnect_max=1.0,
    )

    async def ignore(_: object) -> None:
        return None

    batching = asyncio.create_task(batcher.run())
    reading = asyncio.create_task(source.run(batcher.put, ignore))
    await poll(lambda: source.status().state.value == "connected", 20)
    spec = ",".join(f"{pump}:{sensor.value}" for pump, sensor in sensors)
    published_from = time.perf_counter()
    publisher = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PUBLISHER, str(port), str(count), str(rate), spec, stdout=subprocess.PIPE
    )
    out, _ = await publisher.communicate()
    if not rate:
        print(f"  publisher: {count / (time.perf_counter() - published_from):>10,.0f} messages/s sent (start included)")
    await poll(lambda: len(stored_at) >= count, 30)
    last = time.perf_counter()
    reading.cancel()
    await asyncio.gather(reading, return_exceptions=True)
    await batcher.close()
    await batching
    await db.close()
    if len(stored_at) < count:
        print(f"  (only {len(stored_at):,} of {count:,} readings stored within 30 s of the last publish)")
    rate_stored = len(stored_at) / (last - first[0]) if first else 0.0
    published = {int(i): float(t) for i, t in (line.split() for line in out.decode().splitlines())}
    latencies = [stored_at[i] - t for i, t in published.items() if i in stored_at]
    return rate_stored, latencies


async def start_broker(folder: Path, port: int, wanted: str) -> tuple[asyncio.subprocess.Process, str]:
    """Mosquitto (a C broker, Debian's `mosquitto`) when asked or found, else amqtt; listening on 127.0.0.1 only."""
    mosquitto = shutil.which("mosquitto", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))
    if wanted == "mosquitto" and mosquitto is None:
        raise SystemExit("--broker mosquitto: no mosquitto here (Debian: apt-get install mosquitto)")
    if wanted != "amqtt" and mosquitto is not None:
        config = folder / "mosquitto.conf"
        config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\n")
        process = await asyncio.create_subprocess_exec(mosquitto, "-c", str(config), stderr=subprocess.DEVNULL)
        for _ in range(100):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return process, "mosquitto"
            await asyncio.sleep(0.1)
        raise SystemExit("mosquitto did not start")
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", BROKER % port, stdout=subprocess.PIPE)
    assert process.stdout is not None
    await asyncio.wait_for(process.stdout.readline(), 20)
    return process, "amqtt"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readings", type=int, default=200_000, help="readings for the write-path comparison")
    parser.add_argument("--messages", type=int, default=30_000, help="messages for the MQTT ingestion rate")
    parser.add_argument("--rate", type=float, default=1000.0, help="readings/s for the latency run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the latency run")
    parser.add_argument("--batch-size", type=int, default=500, help="Telemetry.BatchSize")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the write-path comparison")
    parser.add_argument(
        "--broker", choices=["auto", "mosquitto", "amqtt"], default="auto", help="auto: mosquitto when installed"
    )
    args = parser.parse_args()
    print(
        f"telemetry bench · Python {platform.python_version()} · {os.cpu_count()} CPUs · {datetime.now(UTC):%Y-%m-%d}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        await write_path(folder, args.readings, args.batch_size, args.rounds)
        port = free_port()
        broker, name = await start_broker(folder, port, args.broker)
        try:
            rate, _ = await mqtt_run(folder, port, args.messages, 0, args.batch_size)
            print(f"MQTT ingestion, {args.messages:,} QoS-1 messages ({name} broker and publisher in own processes):")
            print(f"  {rate:>10,.0f} readings/s stored (target >= 5,000/s)")
            paced = int(args.rate * args.seconds)
            _, latencies = await mqtt_run(folder, port, paced, args.rate, args.batch_size)
            if latencies:
                print(f"publish-to-stored latency at {args.rate:,.0f} readings/s for {args.seconds:g} s:")
                print(
                    f"  p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p95 {percentile(latencies, 0.95) * 1000:.0f} ms"
                    f", max {max(latencies) * 1000:.0f} ms over {len(latencies):,} readings (target p95 < 1 s)"
                )
        finally:
            broker.kill()
            with contextlib.suppress(Exception):
                await broker.wait()


if __name__ == "__main__":
    asyncio.run(main())
