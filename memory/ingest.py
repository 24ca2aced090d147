"""Ingestion: read documents, chunk them, and make the index hold exactly their current chunks.

Per source, the manifest lists the chunk ids stored last time. Chunks whose id is stored already are
skipped (an id changes whenever the text does); new ones are embedded and upserted; ids no longer
produced are deleted. The manifest is rewritten only after the store has been changed, and a file that
cannot be read is skipped with its reason while its previously indexed chunks stay untouched.

A document deleted from a folder being ingested (or a manual no longer shipped, when the shipped
corpus is ingested) is removed with its chunks: search never cites a manual that is gone. Only files
that no longer exist are removed, and only under a folder that does: a missing folder (an unmounted
share) is reported and removes nothing.

A symbolic link that leads out of a folder being ingested is not followed (see `memory.documents`);
chunks an earlier ingest stored through such a link are removed, unless the file is read this time
by another way (named on the command line).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memory.chunking import Chunk, ChunkingOptions, chunk_markdown
from memory.corpus import SHIPPED_PREFIX, corpus_dir, corpus_files, source_name
from memory.documents import FoundFile, Skipped, SourceDocument, discover, read_document
from memory.errors import DocumentIndexError, EmbeddingModelError, IndexLockedError
from memory.index import DocumentIndex
from memory.manifest import IngestManifest

logger = logging.getLogger(__name__)

# Chunks per embedding call (and per upsert), and new chunks stored before their documents are finished.
EMBED_BATCH = 128
WAVE_CHUNKS = 1024


class IngestProgress(Protocol):
    """Receives progress in chunks: the total once planned, then advances."""

    def start(self, total: int) -> None:
        """Called once with the number of chunks of every readable document."""

    def advance(self, chunks: int) -> None:
        """Called as chunks are handled (skipped as unchanged, or embedded and stored)."""


@dataclass
class IngestReport:
    """The ingest summary (the contract of ``pumpops ingest --json``)."""

    documents: int = 0
    documents_removed: int = 0
    chunks_added: int = 0
    chunks_updated: int = 0
    chunks_removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return asdict(self)


@dataclass(frozen=True)
class _Plan:
    document: SourceDocument
    chunks: list[Chunk]
    new: list[Chunk]
    moved: dict[str, int]
    stale: list[str]


async def ingest(
    paths: Sequence[Path] | None,
    index: DocumentIndex,
    manifest: IngestManifest,
    *,
    options: ChunkingOptions | None = None,
    progress: IngestProgress | None = None,
) -> IngestReport:
    """Ingest files and folders (default: the shipped manuals) into ``index``.

    Raises:
        IndexLockedError: local mode and another process holds the index folder (nothing changed).
        IndexUnavailableError: the store cannot be opened (nothing changed).
        EmbeddingModelError: the embedding model cannot be loaded.
    """
    started = time.perf_counter()
    report = IngestReport()
    targets = list(paths) if paths else corpus_files()
    discovered = discover(targets)
    report.skipped = discovered.skipped
    plans: list[_Plan] = []
    for found in discovered.files:
        read = await asyncio.to_thread(_read_and_chunk, found, options)
        if isinstance(read, Skipped):
            report.skipped.append(read)
        else:
            plans.append(await _plan(*read, index, manifest))
    await _store_plans(plans, index, manifest, progress, report)
    for source in await _vanished(paths, manifest):
        try:
            report.chunks_removed += await _remove(source, index, manifest)
        except DocumentIndexError as exc:
            logger.warning("Removing %s failed: %s", source, exc)
            report.skipped.append(Skipped(source, f"the file is gone but its chunks could not be removed: {exc}"))
            continue
        report.documents_removed += 1
    read_now = {plan.document.source for plan in plans}
    for target in discovered.outside_targets:
        report.documents_removed += await _remove_outside(source_name(target), read_now, index, manifest, report)
    report.seconds = round(time.perf_counter() - started, 3)
    return report


async def _store_plans(
    plans: list[_Plan],
    index: DocumentIndex,
    manifest: IngestManifest,
    progress: IngestProgress | None,
    report: IngestReport,
) -> None:
    """Carry out the plans wave by wave; a document whose indexing fails is skipped, with the reason, the rest go on.

    Raises:
        IndexLockedError: the index folder is locked by another process.
        EmbeddingModelError: the embedding model cannot be loaded.
    """
    if progress is not None:
        progress.start(sum(len(plan.chunks) for plan in plans))
    for wave in _waves(plans):
        # One embedding call per batch across documents: small per-document calls encode markedly slower.
        try:
            await _store_new_chunks(wave, index, progress)
        except (IndexLockedError, EmbeddingModelError):
            raise
        except DocumentIndexError as exc:
            logger.warning("Indexing failed for %d document(s): %s", len(wave), exc)
            report.skipped.extend(Skipped(str(plan.document.path), f"indexing failed: {exc}") for plan in wave)
            continue
        for plan in wave:
            try:
                await _finish(plan, index, manifest)
            except DocumentIndexError as exc:
                logger.warning("Ingesting %s failed: %s", plan.document.path, exc)
                report.skipped.append(Skipped(str(plan.document.path), f"indexing failed: {exc}"))
                continue
            report.documents += 1
            report.chunks_added += len(plan.new)
            report.chunks_updated += len(plan.moved)
            report.chunks_removed += len(plan.stale)


def _read_and_chunk(found: FoundFile, options: ChunkingOptions | None) -> tuple[SourceDocument, list[Chunk]] | Skipped:
    """Read and chunk one file (blocking file and CPU work: runs in a worker thread)."""
    document = read_document(found.path, found.folder)
    if isinstance(document, Skipped):
        return document
    chunks = chunk_markdown(document.text, source=document.source, document=document.name, options=options)
    if not chunks:
        return Skipped(str(found.path), "no text to index (only headings or whitespace)")
    return document, chunks


async def _plan(document: SourceDocument, chunks: list[Chunk], index: DocumentIndex, manifest: IngestManifest) -> _Plan:
    recorded = await manifest.chunks(document.source)
    wanted = {chunk.id for chunk in chunks}
    # Trust the store over the manifest: an id recorded but absent (a fresh ':memory:' store, a wiped
    # folder) is embedded again.
    stored = await index.existing_ids([chunk.id for chunk in chunks])
    new = [chunk for chunk in chunks if chunk.id not in stored]
    moved = {
        chunk.id: chunk.position
        for chunk in chunks
        if chunk.id in stored and chunk.id in recorded and recorded[chunk.id] != chunk.position
    }
    stale = sorted(set(recorded) - wanted)
    return _Plan(document=document, chunks=chunks, new=new, moved=moved, stale=stale)


def _waves(plans: list[_Plan]) -> list[list[_Plan]]:
    """Consecutive groups of plans holding about `WAVE_CHUNKS` new chunks each (or the rest)."""
    waves: list[list[_Plan]] = [[]]
    pending = 0
    for plan in plans:
        waves[-1].append(plan)
        pending += len(plan.new)
        if pending >= WAVE_CHUNKS:
            waves.append([])
            pending = 0
    return [wave for wave in waves if wave]


async def _store_new_chunks(wave: list[_Plan], index: DocumentIndex, progress: IngestProgress | None) -> None:
    """Embed and upsert the wave's new chunks in batches of `EMBED_BATCH` (unchanged ones count as done)."""
    if progress is not None:
        progress.advance(sum(len(plan.chunks) - len(plan.new) for plan in wave))
    new = [chunk for plan in wave for chunk in plan.new]
    size = math.ceil(len(new) / max(1, math.ceil(len(new) / EMBED_BATCH)))  # even batches, none tiny
    for start in range(0, len(new), size or 1):
        batch = new[start : start + size]
        await index.upsert(batch)
        if progress is not None:
            progress.advance(len(batch))


async def _finish(plan: _Plan, index: DocumentIndex, manifest: IngestManifest) -> None:
    """After the new chunks are stored: move shifted ones, delete stale ones, record the document's ids."""
    await index.set_positions(plan.moved)
    await index.delete(plan.stale)
    await manifest.replace(plan.document.source, [(chunk.id, chunk.position) for chunk in plan.chunks])


async def _vanished(paths: Sequence[Path] | None, manifest: IngestManifest) -> list[str]:
    """Recorded sources whose file is gone, under the existing folders ingested (or shipped, by default)."""
    shipped = corpus_dir().resolve()
    folders = [shipped] if not paths else [p.resolve() for p in paths if p.is_dir()]
    gone: list[str] = []
    for source in await manifest.sources():
        if source.startswith(SHIPPED_PREFIX):
            path = shipped / source.removeprefix(SHIPPED_PREFIX)
        else:
            path = Path(source)
        if not path.exists() and not path.is_symlink() and any(path.is_relative_to(f) for f in folders):
            gone.append(source)
    return gone


async def _remove_outside(
    source: str, read_now: set[str], index: DocumentIndex, manifest: IngestManifest, report: IngestReport
) -> int:
    """Remove what an earlier ingest stored through a link that leads out of its folder: 1 when it did."""
    if source in read_now or not await manifest.chunks(source):
        return 0  # named on the command line (or found in another folder) this time, or never stored
    try:
        report.chunks_removed += await _remove(source, index, manifest)
    except DocumentIndexError as exc:
        logger.warning("Removing %s failed: %s", source, exc)
        report.skipped.append(Skipped(source, f"reached through a link out of its folder, but not removed: {exc}"))
        return 0
    return 1


async def _remove(source: str, index: DocumentIndex, manifest: IngestManifest) -> int:
    """Delete a vanished source's chunks, then its manifest entry; the number of chunks removed."""
    recorded = list(await manifest.chunks(source))
    await index.delete(recorded)
    await manifest.replace(source, [])
    return len(recorded)
