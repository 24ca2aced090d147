"""Each embedding model gets its own collection, so vectors of two models are never compared."""

import json
from pathlib import Path

import pytest

from kernel_setup import load_settings
from kernel_setup.manuals import collection_name, document_index, index_config
from memory import EmptyIndexError, IngestManifest, ingest
from storage import open_database
from tests.memory.support import CachingEmbedder


def settings_with(tmp_path: Path, model: str):
    path = tmp_path / "appsettings.json"
    path.write_text(json.dumps({"Qdrant": {"Path": "qdrant"}, "Embeddings": {"Model": model}}), encoding="utf-8")
    return load_settings(path, env={})


def test_the_packaged_model_keeps_the_configured_name_and_each_model_folder_gets_its_own(tmp_path: Path) -> None:
    assert index_config(settings_with(tmp_path, "packaged")).collection == "manuals"
    mpnet = index_config(settings_with(tmp_path, "models/all-mpnet-base-v2")).collection
    assert mpnet.startswith("manuals--all-mpnet-base-v2-") and len(mpnet) == len("manuals--all-mpnet-base-v2-") + 8
    assert mpnet == collection_name("manuals", str(tmp_path / "models" / "all-mpnet-base-v2"))  # resolved path
    assert index_config(settings_with(tmp_path, "other/all-mpnet-base-v2")).collection != mpnet
    assert collection_name("manuals", "/m/odd name!").startswith("manuals--odd-name-")


async def test_after_the_model_changes_search_reports_an_empty_index_instead_of_mixing_vectors(
    tmp_path: Path, embedder: CachingEmbedder
) -> None:
    manual = tmp_path / "docs" / "seal.md"
    manual.parent.mkdir()
    manual.write_text("# Seals\n\n## Leak Check\n\nA steady drip at the gland means worn faces.\n", encoding="utf-8")
    packaged = settings_with(tmp_path, "packaged")
    db = await open_database(tmp_path / "pumpops.db")
    try:
        index = document_index(packaged, embedder)
        try:
            report = await ingest([manual.parent], index, IngestManifest(db, index.config.collection))
            assert report.chunks_added == 1 and (await index.search("gland drip", 1))[0].document == "seal"
        finally:
            await index.close()
        changed = document_index(settings_with(tmp_path, str(tmp_path / "models" / "mpnet")), embedder)
        try:
            with pytest.raises(EmptyIndexError, match="pumpops ingest"):
                await changed.search("gland drip", 1)
        finally:
            await changed.close()
    finally:
        await db.close()
