"""The maintenance manuals and the labeled retrieval questions shipped as package data."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

SHIPPED_PREFIX = "pumpops:corpus/"


def corpus_dir() -> Path:
    """The folder of shipped manuals (Markdown files)."""
    return Path(str(files("memory").joinpath("corpus")))


def corpus_files() -> list[Path]:
    """The shipped manuals, sorted by name."""
    return sorted(corpus_dir().glob("*.md"))


@dataclass(frozen=True)
class LabeledQuestion:
    """A question and the document and section that answer it."""

    question: str
    document: str
    section: str


def retrieval_questions() -> list[LabeledQuestion]:
    """The labeled set for retrieval quality (recall@k, MRR)."""
    path = Path(str(files("memory").joinpath("eval", "retrieval_questions.json")))
    items = json.loads(path.read_text(encoding="utf-8"))
    return [LabeledQuestion(question=i["question"], document=i["document"], section=i["section"]) for i in items]


def source_name(path: Path) -> str:
    """A file's stable source name: ``pumpops:corpus/<name>`` for a shipped manual, else its absolute path.

    Shipped manuals get a name independent of where the package is installed, so their chunk ids are
    the same in every installation.
    """
    resolved = path.resolve()
    if resolved.parent == corpus_dir().resolve():
        return SHIPPED_PREFIX + resolved.name
    return str(resolved)
