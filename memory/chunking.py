"""Splitting a document into chunks by its headings, with overlap inside long sections.

Each chunk keeps the document title, the path of headings above it and the source it came from, and
gets an id derived from the source and its content, so the same text from the same source always has
the same id (re-ingest skips it) and any edit gives a new one.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

# Fixed namespace for chunk ids: uuid5(namespace, source + content). Never change it, or every id changes.
CHUNK_NAMESPACE = uuid.UUID("6f1d3c52-8a0e-4f6b-9c1e-2b7d4a9e5f10")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ChunkingOptions:
    """Sizes in characters. MiniLM reads about 256 word pieces (roughly 1,000 characters) of each chunk."""

    max_chars: int = 1000
    overlap_chars: int = 200


@dataclass(frozen=True)
class Chunk:
    """One piece of a document, ready to embed and store."""

    id: str
    source: str
    document: str
    title: str
    section: str
    section_path: str
    position: int
    text: str

    @property
    def embedding_text(self) -> str:
        """What is embedded: the heading path, then the text (headings carry much of a chunk's meaning)."""
        return f"{self.section_path}\n\n{self.text}"


@dataclass(frozen=True)
class _Section:
    headings: tuple[str, ...]
    body: str


def chunk_markdown(text: str, *, source: str, document: str, options: ChunkingOptions | None = None) -> list[Chunk]:
    """Chunk a Markdown (or plain text) document by headings; long sections become overlapping windows.

    Args:
        text: The document's text.
        source: Where it came from (part of every chunk id), e.g. ``"pumpops:corpus/bearing-failure.md"``.
        document: A short document name for citations, e.g. ``"bearing-failure"``.
        options: Chunk sizes.

    Returns:
        The chunks in document order; empty when the document holds no text under any heading.
    """
    options = options or ChunkingOptions()
    title, sections = _split_sections(text)
    title = title or document
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for section in sections:
        path_parts = (title, *section.headings)
        section_path = " > ".join(path_parts)
        section_name = section.headings[-1] if section.headings else title
        for window in _windows(section.body, options):
            content = f"{section_path}\n{window}"
            occurrence = seen.get(content, 0)
            seen[content] = occurrence + 1
            key = f"{source}\x1f{content}" + (f"\x1f{occurrence}" if occurrence else "")
            chunks.append(
                Chunk(
                    id=str(uuid.uuid5(CHUNK_NAMESPACE, key)),
                    source=source,
                    document=document,
                    title=title,
                    section=section_name,
                    section_path=section_path,
                    position=len(chunks),
                    text=window,
                )
            )
    return chunks


def _split_sections(text: str) -> tuple[str | None, list[_Section]]:
    """The first level-1 heading (the title) and every section's heading path and body."""
    title: str | None = None
    stack: list[tuple[int, str]] = []
    sections: list[_Section] = []
    body: list[str] = []
    in_fence = False

    def flush() -> None:
        content = "\n".join(body).strip()
        if content:
            sections.append(_Section(headings=tuple(h for _, h in stack), body=content))
        body.clear()

    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            body.append(line)
            continue
        flush()
        level, heading = len(match.group(1)), match.group(2).strip()
        if level == 1 and title is None and not sections and not stack:
            title = heading
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
    flush()
    return title, sections


def _windows(body: str, options: ChunkingOptions) -> list[str]:
    """Pack paragraphs into windows of at most ``max_chars``.

    Each window after the first repeats the tail of the one before (up to ``overlap_chars``), so a fact
    spanning the seam is whole in one of them.
    """
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", body):
        paragraph = paragraph.strip()
        if paragraph:
            pieces.extend(_split_long(paragraph, options.max_chars))
    windows: list[str] = []
    current: list[str] = []
    for piece in pieces:
        candidate = "\n\n".join([*current, piece])
        if current and len(candidate) > options.max_chars:
            windows.append("\n\n".join(current))
            overlap = _tail(current[-1], options.overlap_chars)
            current = [overlap, piece] if overlap and len(overlap) + len(piece) + 2 <= options.max_chars else [piece]
        else:
            current.append(piece)
    if current:
        windows.append("\n\n".join(current))
    return windows


def _split_long(paragraph: str, max_chars: int) -> list[str]:
    """Split a paragraph longer than ``max_chars``: by lines (lists, tables), then sentences, then words."""
    if len(paragraph) <= max_chars:
        return [paragraph]
    lines = paragraph.split("\n")
    if len(lines) > 3 and all(line.lstrip().startswith("|") for line in lines):
        # A table: every piece repeats the header row and its separator, so each piece reads on its own.
        header = "\n".join(lines[:2])
        rows = _pack(lines[2:], max(max_chars - len(header) - 1, 1), "\n")
        return [f"{header}\n{rows_piece}" for rows_piece in rows]
    for splitter in (re.compile(r"\n"), _SENTENCE_END, re.compile(r"\s+")):
        parts = [p for p in splitter.split(paragraph) if p.strip()]
        if len(parts) > 1:
            joiner = "\n" if splitter.pattern == r"\n" else " "
            return _pack(parts, max_chars, joiner)
    return [paragraph[i : i + max_chars] for i in range(0, len(paragraph), max_chars)]


def _pack(parts: list[str], max_chars: int, joiner: str) -> list[str]:
    out: list[str] = []
    current = ""
    for part in parts:
        if len(part) > max_chars:
            if current:
                out.append(current)
                current = ""
            out.extend(_split_long(part, max_chars))
            continue
        candidate = f"{current}{joiner}{part}" if current else part
        if len(candidate) > max_chars:
            out.append(current)
            current = part
        else:
            current = candidate
    if current:
        out.append(current)
    return out


def _tail(text: str, limit: int) -> str:
    """The last whole sentences (or words) of ``text`` within ``limit`` characters."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    sentences = _SENTENCE_END.split(text)
    tail = ""
    for sentence in reversed(sentences):
        candidate = f"{sentence} {tail}".strip()
        if len(candidate) > limit:
            break
        tail = candidate
    if tail:
        return tail
    words = text[-limit:].split(" ", 1)
    return words[1] if len(words) == 2 else words[0]
