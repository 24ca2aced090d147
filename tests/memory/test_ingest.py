import os
from pathlib import Path

import pytest

from memory import DocumentIndex, IndexConfig, IngestManifest, chunk_markdown, corpus_files, documents, ingest
from memory.corpus import source_name
from tests.memory.support import REPORT_KEYS, CachingEmbedder

MANUAL_A = """# Seal Manual

## Leak Check

Look for drips at the gland. A steady drip means the faces are worn.

## Flush

Keep the flush flowing before start.
"""

MANUAL_B = """# Bearing Notes

## Temperature

Bearings run below 70 degrees in normal service.
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


async def ingest_two_manuals(
    index: DocumentIndex, manifest: IngestManifest, folder: Path
) -> tuple[Path, Path, set[str], set[str]]:
    """Manuals a and b ingested from ``folder``: their paths and stored chunk ids."""
    a, b = write(folder, "a.md", MANUAL_A), write(folder, "b.md", MANUAL_B)
    await ingest([folder], index, manifest)
    return a, b, await stored_ids_of(index, manifest, a), await stored_ids_of(index, manifest, b)


async def stored_ids_of(index: DocumentIndex, manifest: IngestManifest, path: Path) -> set[str]:
    recorded = set(await manifest.chunks(source_name(path)))
    assert await index.existing_ids(list(recorded)) == recorded
    return recorded


async def test_ingesting_the_shipped_corpus_indexes_every_chunk_once(
    memory_index: DocumentIndex, manifest: IngestManifest
) -> None:
    expected = sum(len(chunk_markdown(p.read_text("utf-8"), source="x", document=p.stem)) for p in corpus_files())
    report = await ingest(None, memory_index, manifest)
    assert (report.documents, report.chunks_added, report.chunks_updated, report.chunks_removed) == (14, expected, 0, 0)
    assert report.skipped == []
    assert await memory_index.count() == expected
    assert len(await manifest.sources()) == 14
    assert set(report.to_dict()) == REPORT_KEYS


async def test_re_ingesting_unchanged_documents_adds_nothing(
    memory_index: DocumentIndex, manifest: IngestManifest, embedder: CachingEmbedder
) -> None:
    first = await ingest(None, memory_index, manifest)
    encoded_before = embedder.encoded_texts
    again = await ingest(None, memory_index, manifest)
    assert (again.documents, again.chunks_added, again.chunks_updated, again.chunks_removed) == (14, 0, 0, 0)
    assert embedder.encoded_texts == encoded_before
    assert await memory_index.count() == first.chunks_added


async def test_an_edited_document_replaces_exactly_its_changed_chunks(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    a, b, ids_a, ids_b = await ingest_two_manuals(memory_index, manifest, tmp_path)

    write(tmp_path, "a.md", MANUAL_A.replace("Keep the flush flowing", "Keep the seal flush flowing"))
    report = await ingest([tmp_path], memory_index, manifest)

    assert (report.documents, report.chunks_added, report.chunks_updated, report.chunks_removed) == (2, 1, 0, 1)
    new_ids_a = await stored_ids_of(memory_index, manifest, a)
    assert len(ids_a - new_ids_a) == 1 and len(new_ids_a - ids_a) == 1
    assert not await memory_index.existing_ids(list(ids_a - new_ids_a))
    assert await stored_ids_of(memory_index, manifest, b) == ids_b
    assert await memory_index.count() == len(new_ids_a) + len(ids_b)


async def test_a_document_deleted_from_the_folder_leaves_the_index_with_its_chunks(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    a, b, ids_a, ids_b = await ingest_two_manuals(memory_index, manifest, tmp_path)

    b.unlink()
    assert (await ingest([b], memory_index, manifest)).documents_removed == 0  # a file named alone: not a folder
    report = await ingest([tmp_path], memory_index, manifest)

    assert (report.documents, report.documents_removed, report.chunks_removed) == (1, 1, len(ids_b))
    assert not await memory_index.existing_ids(list(ids_b))
    assert await manifest.sources() == [source_name(a)]
    assert await memory_index.count() == len(ids_a)
    hits = await memory_index.search("bearing temperature in normal service", 3)
    assert all(hit.document != "b" for hit in hits)


async def test_a_manual_no_longer_shipped_leaves_the_index_when_the_corpus_is_ingested(
    memory_index: DocumentIndex, manifest: IngestManifest
) -> None:
    retired = chunk_markdown(MANUAL_B, source="pumpops:corpus/retired.md", document="retired")
    await memory_index.upsert(retired)
    await manifest.replace("pumpops:corpus/retired.md", [(chunk.id, chunk.position) for chunk in retired])
    report = await ingest(None, memory_index, manifest)
    assert (report.documents, report.documents_removed, report.chunks_removed) == (14, 1, len(retired))
    assert not await memory_index.existing_ids([chunk.id for chunk in retired])
    assert "pumpops:corpus/retired.md" not in await manifest.sources()


async def test_a_folder_that_is_missing_removes_nothing(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    folder = tmp_path / "share"
    folder.mkdir()
    write(folder, "a.md", MANUAL_A)
    await ingest([folder], memory_index, manifest)
    before = await memory_index.count()
    (folder / "a.md").rename(tmp_path / "a.md")
    folder.rmdir()  # as an unmounted share looks
    report = await ingest([folder], memory_index, manifest)
    assert (report.documents, report.documents_removed, report.chunks_removed) == (0, 0, 0)
    assert [s.reason for s in report.skipped] == ["no such file or folder"]
    assert await memory_index.count() == before


async def test_a_section_moved_down_is_updated_in_place_without_re_embedding(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    write(tmp_path, "a.md", MANUAL_A)
    await ingest([tmp_path], memory_index, manifest)
    write(tmp_path, "a.md", MANUAL_A.replace("## Leak Check", "## Safety\n\nWear gloves.\n\n## Leak Check"))
    report = await ingest([tmp_path], memory_index, manifest)
    assert (report.chunks_added, report.chunks_updated, report.chunks_removed) == (1, 2, 0)
    hits = await memory_index.search("seal flush before start", 1, document="a")
    assert (hits[0].section, hits[0].position) == ("Flush", 2)


async def test_bad_files_are_skipped_by_name_while_good_ones_index(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    good = write(tmp_path, "good.md", MANUAL_B)
    write(tmp_path, "empty.md", "  \n")
    (tmp_path / "binary.md").write_bytes(b"# Title\n\x00\x01\x02 binary")
    (tmp_path / "latin1.md").write_bytes("# Pumpe\n\nDrehzahl über 1500".encode("latin-1"))
    write(tmp_path, "headings.md", "# Only\n\n## Headings\n")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    missing = tmp_path / "missing.md"

    report = await ingest([tmp_path, missing], memory_index, manifest)

    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons["empty.md"] == "empty file"
    assert reasons["binary.md"] == "binary file, not text"
    assert reasons["latin1.md"].startswith("not UTF-8 text")
    assert reasons["headings.md"].startswith("no text to index")
    assert reasons["dangling.md"] == "not a regular file"
    assert reasons["missing.md"] == "no such file or folder"
    assert report.documents == 1 and report.chunks_added == 1
    assert await stored_ids_of(memory_index, manifest, good)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_an_unreadable_file_is_skipped_with_the_reason(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    locked = write(tmp_path, "locked.md", MANUAL_A)
    locked.chmod(0)
    report = await ingest([locked], memory_index, manifest)
    assert [(Path(s.path).name, s.reason.startswith("cannot read")) for s in report.skipped] == [("locked.md", True)]


async def test_a_document_that_turns_bad_keeps_what_it_had_indexed(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    a = write(tmp_path, "a.md", MANUAL_A)
    write(tmp_path, "b.md", MANUAL_B)
    await ingest([tmp_path], memory_index, manifest)
    before = await stored_ids_of(memory_index, manifest, a)
    count = await memory_index.count()

    a.write_bytes(b"\xff\xfe corrupted")
    report = await ingest([tmp_path], memory_index, manifest)

    assert [Path(s.path).name for s in report.skipped] == ["a.md"]
    assert report.documents == 1 and report.chunks_removed == 0
    assert await stored_ids_of(memory_index, manifest, a) == before
    assert await memory_index.count() == count


async def test_a_fresh_store_is_refilled_even_though_the_manifest_remembers_the_chunks(
    embedder: CachingEmbedder, manifest: IngestManifest, tmp_path: Path
) -> None:
    write(tmp_path, "a.md", MANUAL_A)
    async with DocumentIndex(IndexConfig(path=":memory:"), embedder) as first:
        added = (await ingest([tmp_path], first, manifest)).chunks_added
    async with DocumentIndex(IndexConfig(path=":memory:"), embedder) as fresh:
        report = await ingest([tmp_path], fresh, manifest)
        assert report.chunks_added == added and await fresh.count() == added


SECRET = "# Credentials\n\n## Root\n\nroot:x:0:0 zebra-quartz-token lives only outside the manuals folder.\n"
PROC_STATUS = Path("/proc/self/status")
needs_proc = pytest.mark.skipif(not PROC_STATUS.is_file(), reason="needs Linux /proc")


def manuals_with_a_link_out(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A manuals folder holding a.md and handbook.md, a link to a file in a folder beside it: (folder, link, secret)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = write(outside, "secret.md", SECRET)
    folder = tmp_path / "manuals"
    folder.mkdir()
    write(folder, "a.md", MANUAL_A)
    link = folder / "handbook.md"
    link.symlink_to(secret)
    return folder, link, secret


async def test_a_symlink_leading_out_of_the_folder_is_skipped_and_never_searchable(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    folder, link, secret = manuals_with_a_link_out(tmp_path)

    report = await ingest([folder], memory_index, manifest)

    assert report.documents == 1
    assert [s.path for s in report.skipped] == [str(link)]
    assert f"symbolic link to {str(secret.resolve())!r}, outside the folder" in report.skipped[0].reason
    assert await manifest.sources() == [source_name(folder / "a.md")]
    hits = await memory_index.search("zebra-quartz-token root credentials", 4)
    assert all("zebra" not in hit.text for hit in hits)


async def test_a_symlinked_folder_inside_the_ingested_folder_is_not_walked(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = write(outside, "secret.md", SECRET)
    folder = tmp_path / "manuals"
    folder.mkdir()
    write(folder, "a.md", MANUAL_A)
    (folder / "more").symlink_to(outside, target_is_directory=True)

    report = await ingest([folder], memory_index, manifest)

    assert (report.documents, report.skipped) == (1, [])
    assert source_name(secret) not in await manifest.sources()


async def test_a_symlink_that_stays_inside_the_folder_is_followed(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    real = write(tmp_path / "sub", "bearings.md", MANUAL_B)
    (tmp_path / "alias.md").symlink_to(Path("sub") / "bearings.md")

    report = await ingest([tmp_path], memory_index, manifest)

    assert (report.documents, report.skipped) == (1, [])
    assert await manifest.sources() == [source_name(real)]


async def test_chunks_stored_through_a_link_out_of_the_folder_are_removed_by_the_next_ingest(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    folder, _, secret = manuals_with_a_link_out(tmp_path)
    await ingest([secret], memory_index, manifest)  # what an ingest that followed the link stored
    stored = await stored_ids_of(memory_index, manifest, secret)

    report = await ingest([folder], memory_index, manifest)

    assert report.documents_removed == 1 and report.chunks_removed == len(stored)
    assert await memory_index.existing_ids(list(stored)) == set()
    assert await manifest.sources() == [source_name(folder / "a.md")]


async def test_a_named_pipe_is_skipped_without_blocking_the_ingest(
    memory_index: DocumentIndex, manifest: IngestManifest, tmp_path: Path
) -> None:
    write(tmp_path, "a.md", MANUAL_A)
    pipe = tmp_path / "pipe.md"
    os.mkfifo(pipe)

    report = await ingest([tmp_path, pipe], memory_index, manifest)

    assert [(s.path, s.reason) for s in report.skipped] == [(str(pipe), "not a regular file (a named pipe)")]
    assert report.documents == 1


@needs_proc
async def test_a_virtual_file_whose_size_reads_as_zero_is_skipped(
    memory_index: DocumentIndex, manifest: IngestManifest
) -> None:
    report = await ingest([PROC_STATUS], memory_index, manifest)
    assert report.documents == 0 and await manifest.sources() == []
    assert [s.path for s in report.skipped] == [str(PROC_STATUS)]
    assert report.skipped[0].reason.startswith("its size reads as 0 bytes but")


@needs_proc
async def test_the_size_limit_counts_the_bytes_read_not_the_size_the_file_claims(
    memory_index: DocumentIndex, manifest: IngestManifest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "MAX_BYTES", 64)  # /proc/self/status claims 0 bytes and holds about 1,400
    report = await ingest([PROC_STATUS], memory_index, manifest)
    assert report.documents == 0
    assert [s.reason for s in report.skipped] == ["too large (more than 64 bytes read; the limit is 64)"]
