"""SQL-injection payloads through every string parameter: no extra rows, schema and counts unchanged."""

from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.exceptions import KernelInvokeException

from storage import Database
from tests.plugins.conftest import Invoke

PAYLOADS = [
    "' OR '1'='1",
    "' OR 1=1 --",
    "PUMP-001' OR '1'='1",
    "PUMP-007'; DROP TABLE pumps; --",
    "'; DELETE FROM alarms; --",
    "' UNION SELECT * FROM pumps --",
    "' UNION SELECT name, sql, 1, 1, 1, 1 FROM sqlite_master --",
    '" OR ""="',
    "1; UPDATE pumps SET status='offline'",
    "PUMP-007' --",
    "PUMP-007'/*",
    "*/ OR 1=1 /*",
    "') OR ('a'='a",
    "' AND 1=0 UNION ALL SELECT sqlite_version() --",
    "%",
    "%%",
    "_",
    "PUMP-00_",
    "Station-%",
    "\\",
    "\\%",
    "' OR pump_id LIKE '%",
    "'||(SELECT group_concat(pump_id) FROM pumps)||'",
    "x' AND (SELECT COUNT(*) FROM pumps) > 0 AND 'a'='a",
    "'; ATTACH DATABASE '/tmp/evil.db' AS evil; --",
    "'; PRAGMA writable_schema=1; --",
    "' OR EXISTS(SELECT 1 FROM alarms) --",
    "0x50554D502D303037",
    "PUMP-007\x00' OR '1'='1",
    "ＰＵＭＰ-００７' OR '1'='1",
    "PUMP-007' ORDER BY 1 --",
    "' GLOB '*",
    "?1",
    "'; INSERT INTO alarms VALUES ('ALM-9999','PUMP-001',NULL,'low','x',NULL,'t',1,NULL,NULL,NULL,NULL); --",
]

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("assets-get_pump_details", "pump_id", {}),
    ("assets-list_pumps", "location", {}),
    ("alarms-list_alarms", "pump_id", {"active_only": False}),
    ("sensors-get_sensor_readings", "pump_id", {"sensor_type": "vibration"}),
    ("sensors-get_sensor_trend", "pump_id", {"sensor_type": "vibration"}),
]


async def _fingerprint(db: Database) -> tuple[Any, ...]:
    if db.dialect.is_postgres:
        schema = await db.fetch_all(
            "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "WHERE c.table_schema = 'public' ORDER BY 1, 2"
        )
    else:
        schema = await db.fetch_all("SELECT type, name, sql FROM sqlite_master ORDER BY name")
    counts = await db.fetch_one(
        "SELECT (SELECT COUNT(*) FROM pumps), (SELECT COUNT(*) FROM sensors), (SELECT COUNT(*) FROM readings), "
        "(SELECT COUNT(*) FROM alarms), (SELECT COUNT(*) FROM maintenance_records)"
    )
    statuses = [row["status"] for row in await db.fetch_all("SELECT status FROM pumps ORDER BY pump_id")]
    assert counts is not None
    return tuple(tuple(r) for r in schema), tuple(counts), tuple(statuses)


def test_there_are_at_least_thirty_payloads() -> None:
    assert len(PAYLOADS) >= 30


@pytest.mark.parametrize(("function", "parameter", "extra"), CALLS)
async def test_injection_payloads_return_no_rows_and_change_nothing(
    invoke: Invoke, kernel: Kernel, function: str, parameter: str, extra: dict[str, Any], app: Any
) -> None:
    before = await _fingerprint(app.db)
    for payload in PAYLOADS:
        try:
            result = await invoke(function, **{parameter: payload}, **extra)
        except KernelInvokeException as exc:
            message = str(exc.__cause__)
            assert "No pump found" in message or "characters" in message or "NUL" in message, message
            continue
        for key in ("pumps", "alarms", "readings"):
            if key in result and isinstance(result[key], list):
                assert result[key] == [], (function, payload, result)
        if "count" in result:
            assert result["count"] == 0, (function, payload)
    assert await _fingerprint(app.db) == before


def test_no_sql_is_built_by_string_formatting() -> None:
    """Every execute/fetch call passes a literal or a constant concatenation, never an f-string or %."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = []
    pattern = re.compile(r"(execute|executemany|fetch_one|fetch_all)\(\s*f[\"']|\.format\(|%\s*\(", re.MULTILINE)
    for package in ("storage", "twin", "plugins", "memory", "kernel_setup"):
        for path in (root / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                snippet = text[match.start() : match.start() + 40]
                if "execute" in snippet or "fetch" in snippet:
                    offenders.append(f"{path.relative_to(root)}:{line}")
    assert offenders == []
