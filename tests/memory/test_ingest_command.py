"""`pumpops ingest` as the operator runs it (mounted on a root like the real one; main.py wires it the same way)."""

import json
import os
from pathlib import Path

import typer
from qdrant_client import QdrantClient
from rich.console import Console
from typer.testing import CliRunner

from doors.cli.common import CliState
from doors.cli.ingest_cmd import ingest_command
from tests.memory.support import REPORT_KEYS


def pumpops() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def root(ctx: typer.Context, settings: str | None = typer.Option(None, "--settings")) -> None:
        ctx.obj = CliState(settings_path=settings, console=Console(), err_console=Console(stderr=True))

    app.command("ingest")(ingest_command)
    return app


def settings_file(tmp_path: Path) -> Path:
    path = tmp_path / "appsettings.json"
    path.write_text(json.dumps({"Database": {"Path": "data/test.db"}, "Qdrant": {"Path": "data/qdrant"}}))
    return path


def test_ingest_json_summary_reports_documents_chunks_and_skipped_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "seal.md").write_text("# Seal\n\n## Flush\n\nKeep the flush flowing.\n", encoding="utf-8")
    (docs / "blank.md").write_text("", encoding="utf-8")
    settings = settings_file(tmp_path)

    first = CliRunner().invoke(pumpops(), ["--settings", str(settings), "ingest", str(docs), "--json"])
    again = CliRunner().invoke(pumpops(), ["--settings", str(settings), "ingest", str(docs), "--json"])

    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert set(summary) == REPORT_KEYS
    assert (summary["documents"], summary["chunks_added"], summary["chunks_removed"]) == (1, 1, 0)
    assert summary["skipped"] == [{"path": str(docs / "blank.md"), "reason": "empty file"}]
    assert json.loads(again.stdout)["chunks_added"] == 0
    assert (tmp_path / "data" / "qdrant").is_dir() and (tmp_path / "data" / "test.db").is_file()


def test_ingest_exits_non_zero_when_nothing_could_be_ingested(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"\x00\x01")
    result = CliRunner().invoke(pumpops(), ["--settings", str(settings_file(tmp_path)), "ingest", str(bad)])
    assert result.exit_code == 1
    assert "bad.md: binary file, not text" in " ".join(result.stderr.split())


def test_ingest_names_the_process_holding_the_local_index(tmp_path: Path) -> None:
    settings = settings_file(tmp_path)
    holder = QdrantClient(path=str(tmp_path / "data" / "qdrant"))
    try:
        result = CliRunner().invoke(pumpops(), ["--settings", str(settings), "ingest", "--json"])
    finally:
        holder.close()
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert f"in use by process {os.getpid()}" in message and "Qdrant.Url" in message


def test_ingest_json_lists_a_symlink_out_of_the_folder_as_skipped(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "seal.md").write_text("# Seal\n\n## Flush\n\nKeep the flush flowing.\n", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    (docs / "handbook.md").symlink_to(secret)

    result = CliRunner().invoke(pumpops(), ["--settings", str(settings_file(tmp_path)), "ingest", str(docs), "--json"])

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["documents"] == 1
    assert [s["path"] for s in summary["skipped"]] == [str(docs / "handbook.md")]
    assert "outside the folder being ingested; not followed" in summary["skipped"][0]["reason"]
