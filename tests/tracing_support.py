"""Shared by the tracing tests: settings with tracing on, and the finished spans read by name and by parent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from kernel_setup import Settings, load_settings
from tests.postgres_server import database_section


def traced_settings(
    tmp_path: Path, *, include_content: bool = False, database: str | Path | None = None, **sections: Any
) -> Settings:
    """Settings on a temp database with `Tracing.Enabled` (the exporter is the test's in-memory one).

    ``database`` is a test's `database_target` (a PostgreSQL URL runs it there); left out, an SQLite file in
    ``tmp_path``.
    """
    path = tmp_path / "appsettings.json"
    body = {
        "Database": {"Path": "t.db"} if database is None else database_section(database, "t.db"),
        "Qdrant": {"Path": ":memory:"},
        "Tracing": {"Enabled": True, "IncludeContent": include_content},
        **sections,
    }
    path.write_text(json.dumps(body))
    return load_settings(path, env={})


def named(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    """The spans whose name starts with ``prefix``, in the order they ended."""
    return [s for s in spans if s.name.startswith(prefix)]


def parent_of(span: ReadableSpan) -> int | None:
    """The span id of ``span``'s parent, or None for a root span."""
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def all_attribute_text(spans: tuple[ReadableSpan, ...]) -> str:
    """Every attribute value of every span, as one text to search."""
    return "\n".join(str(value) for s in spans for value in (s.attributes or {}).values())
