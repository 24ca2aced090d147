"""`pumpops simulate` and `pumpops telemetry` as real processes: the newcomer's path from a simulated plant to an
alarm, a clean stop on SIGTERM that writes what it holds, and `telemetry status`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kernel_setup import load_settings
from storage import open_database
from telemetry.sources.base import SourceState, SourceStatus
from telemetry.status import StatusBoard
from tests.cli_process import CLI_CODE, REPO, run_pumpops
from tests.postgres_server import database_section, query
from tests.telemetry.plant_servers import free_port

WAIT_SECONDS = 60.0


def write_settings(folder: Path, target: str | Path | None) -> Path:
    """Settings for the test's `database_target` (``None``: a plain SQLite file, for a test that never opens it)."""
    path = folder / "appsettings.json"
    path.write_text(
        json.dumps(
            {
                "Database": database_section(target, "plant.db") if target is not None else {"Path": "plant.db"},
                "Qdrant": {"Path": ":memory:"},
                "Telemetry": {"FlushSeconds": 0.2, "ReconnectMinSeconds": 0.1, "ReconnectMaxSeconds": 0.5},
                "Alarms": {"RaiseAfterSeconds": 1, "ClearAfterSeconds": 1},
            }
        )
    )
    return path


async def pumpops(settings: Path, *args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("PUMPOPS_")}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), clean.get("PYTHONPATH")]))
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLI_CODE,
        "--settings",
        str(settings),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**clean, "COLUMNS": "200", **(env or {})},
        cwd=settings.parent,
    )


async def point_service_at(
    settings: Path, simulator: asyncio.subprocess.Process
) -> tuple[asyncio.subprocess.Process, str]:
    """Start `pumpops telemetry --no-triage` with exactly the line the simulator printed; return it and the sources."""
    assert simulator.stdout is not None
    line = (await asyncio.wait_for(simulator.stdout.readline(), WAIT_SECONDS)).decode()
    match = re.fullmatch(r"PUMPOPS_Telemetry__OpcUa='(.+)' pumpops telemetry\n", line)
    assert match, line
    service = await pumpops(settings, "telemetry", "--no-triage", env={"PUMPOPS_Telemetry__OpcUa": match[1]})
    return service, match[1]


def telemetry_alarms(settings: Path, pump: str) -> list[tuple[object, ...]]:
    sql = "SELECT alarm_id, severity FROM alarms WHERE pump_id = ? AND origin = 'telemetry'"
    return [tuple(row.values()) for row in query(settings, sql, (pump,))]


async def stop(process: asyncio.subprocess.Process) -> tuple[int, str]:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return process.returncode, err.decode()


def test_telemetry_without_a_source_says_how_to_configure_one(tmp_path: Path) -> None:
    """Refused before the database is opened: no backend to run it on."""
    result = run_pumpops(write_settings(tmp_path, None), "telemetry")
    assert result.returncode == 2
    assert "no telemetry source is configured" in result.stderr
    assert "Telemetry.OpcUa" in result.stderr and "pumpops simulate" in result.stderr


def test_telemetry_with_a_missing_opc_ua_certificate_file_exits_naming_the_file(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, database_target)
    document = json.loads(settings.read_text())
    source = {
        "Name": "secured",
        "Endpoint": f"opc.tcp://127.0.0.1:{free_port()}",
        "SecurityPolicy": "Basic256Sha256",
        "SecurityMode": "SignAndEncrypt",
        "Certificate": "certs/pumpops.pem",
        "PrivateKey": "certs/pumpops.key",
    }
    document["Telemetry"]["OpcUa"] = [source]
    settings.write_text(json.dumps(document))
    result = run_pumpops(settings, "telemetry", "--no-triage")
    assert result.returncode == 2, result.stderr
    message = " ".join(result.stderr.split())
    assert "Telemetry.OpcUa source 'secured': Certificate file 'certs/pumpops.pem' does not exist" in message
    assert "X.509 certificate file" in message


async def test_sampling_faster_than_once_a_second_is_told_at_start_that_values_of_one_second_are_one_reading(
    tmp_path: Path,
) -> None:
    settings = write_settings(tmp_path, tmp_path / "plant.db")
    document = json.loads(settings.read_text())
    fast = {"Name": "fast-plc", "Endpoint": f"opc.tcp://127.0.0.1:{free_port()}", "SamplingIntervalMs": 100}
    slow = {"Name": "slow-plc", "Endpoint": f"opc.tcp://127.0.0.1:{free_port()}", "SamplingIntervalMs": 1000}
    for source in (fast, slow):
        source["Nodes"] = [{"Pump": "PUMP-001", "Sensor": "vibration", "NodeId": "ns=2;s=P1.Vibration"}]
    document["Telemetry"]["OpcUa"] = [fast, slow]
    settings.write_text(json.dumps(document))
    assert run_pumpops(settings, "db", "init").returncode == 0
    service = await pumpops(settings, "telemetry", "--no-triage")
    assert service.stderr is not None
    told: list[str] = []
    while not any("Ctrl-C or SIGTERM stops" in line for line in told):
        line = (await asyncio.wait_for(service.stderr.readline(), WAIT_SECONDS)).decode()
        assert line, "".join(told)
        told.append(line)
    code, rest = await stop(service)
    assert code == 0, rest
    said = " ".join("".join(told).split())
    assert "note: fast-plc samples every 100 ms, but readings are stored one per sensor and second" in said
    assert "slow-plc samples" not in said


def test_telemetry_status_shows_the_nodes_a_server_refused(tmp_path: Path, database_target: str | Path) -> None:
    settings = write_settings(tmp_path, database_target)

    async def record() -> None:
        db = await open_database(load_settings(settings, env={}).database_target)
        try:
            board = StatusBoard(db)
            refused = ("ns=2;s=P9.Flow (BadNodeIdUnknown)",)
            await board.report(SourceStatus("plc", "opcua", SourceState.CONNECTED, refused=refused))
        finally:
            await db.close()

    asyncio.run(record())
    table = run_pumpops(settings, "telemetry", "status")
    assert table.returncode == 0, table.stderr
    assert "1 node(s) refused: ns=2;s=P9.Flow (BadNodeIdUnknown)" in table.stdout
    as_json = run_pumpops(settings, "telemetry", "status", "--json")
    [source] = json.loads(as_json.stdout)["sources"]
    assert source["refused"] == ["ns=2;s=P9.Flow (BadNodeIdUnknown)"]


async def test_the_simulated_plant_drifts_into_an_alarm_the_service_raises_and_stops_cleanly_on_sigterm(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, database_target)
    assert run_pumpops(settings, "db", "init").returncode == 0
    endpoint = f"opc.tcp://127.0.0.1:{free_port()}/pumpops/"
    simulator = await pumpops(
        settings, "simulate", "opcua", "--endpoint", endpoint, "--rate", "4", "--drift", "PUMP-002",
        "--drift-seconds", "2",
    )  # fmt: skip
    service: asyncio.subprocess.Process | None = None
    try:
        service, sources = await point_service_at(settings, simulator)
        for _ in range(int(WAIT_SECONDS / 0.2)):
            if telemetry_alarms(settings, "PUMP-002"):
                break
            await asyncio.sleep(0.2)
        [(alarm_id, _)] = telemetry_alarms(settings, "PUMP-002")
        code, err = await stop(service)
        assert code == 0, err
        assert f"alarm {alarm_id} PUMP-002" in " ".join(err.split())
        stored = re.search(r"stopped: (\d+) readings stored", err)
        assert stored and int(stored[1]) > 0, err
    finally:
        if service is not None and service.returncode is None:
            service.kill()
        await stop(simulator)

    status = run_pumpops(settings, "telemetry", "status", "--json", env={"PUMPOPS_Telemetry__OpcUa": sources})
    assert status.returncode == 0, status.stderr
    [source] = json.loads(status.stdout)["sources"]
    assert source["name"] == "simulator" and source["state"] == "stopped" and source["received"] > 0


async def test_a_service_killed_mid_stream_leaves_a_sound_database_with_every_batch_whole(
    tmp_path: Path, database_target: str | Path
) -> None:
    settings = write_settings(tmp_path, database_target)
    assert run_pumpops(settings, "db", "init").returncode == 0
    endpoint = f"opc.tcp://127.0.0.1:{free_port()}/pumpops/"
    simulator = await pumpops(settings, "simulate", "opcua", "--endpoint", endpoint, "--rate", "4")
    service: asyncio.subprocess.Process | None = None
    try:
        service, _ = await point_service_at(settings, simulator)
        for _ in range(int(WAIT_SECONDS / 0.1)):
            if query(settings, "SELECT count(*) AS n FROM telemetry_sources WHERE received > 0")[0]["n"]:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # batches keep being written (FlushSeconds 0.2) while it is killed
        service.kill()
        await asyncio.wait_for(service.wait(), 30)
    finally:
        if service is not None and service.returncode is None:
            service.kill()
        await stop(simulator)
    assert service.returncode == -signal.SIGKILL
    if isinstance(database_target, Path):  # a file the kill could have torn; a server rolls the transaction back
        [check] = query(settings, "PRAGMA integrity_check")
        assert list(check.values()) == ["ok"]
    # A batch's readings and the sensors' latest values commit together: each latest is its newest reading.
    [behind] = query(
        settings,
        "SELECT count(*) AS n FROM sensors s WHERE s.latest_at <> "
        "(SELECT max(recorded_at) FROM readings r WHERE r.sensor_id = s.sensor_id)",
    )
    recent = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    [live] = query(settings, "SELECT count(*) AS n FROM readings WHERE recorded_at > ?", (recent,))
    assert behind["n"] == 0
    assert isinstance(live["n"], int) and live["n"] > 0
