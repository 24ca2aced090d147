"""Find held-back questions quoted in the product's words: prompts, word lists, tool descriptions, data, benchmarks.

A held-back item measures whether the product generalises only while nothing in the product was chosen
with it in view. A prompt or word list that quotes its question (or a distinctive run of its words) is
the trace such a choice leaves. `find_leaks` compares each question with the string literals of the
product's Python sources and the whole text of its other files, both folded to lower-case words, so case,
whitespace and punctuation do not hide a quote.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PRODUCT_PACKAGES", "Leak", "find_leaks", "product_texts", "string_literals", "words"]

PRODUCT_PACKAGES = ("checks", "chat", "turn", "kernel_setup", "plugins", "bench")
"""The folders whose words steer the model or judge its answers, and the benchmarks that chose their thresholds."""

NGRAM = 5
"""A run of this many words of a question, found in product text, is a quote."""

_MAX_DATA_BYTES = 2_000_000  # a data file larger than this is not a prompt or a word list (a model, a database)
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
# Words every sentence has: a run of five made only of these (and at most one other word) says nothing.
_COMMON = frozenset(
    "a an and any are as at be been but by can could did do does for from had has have how i if in is it its "
    "me my no not of on or our should so that the their them then there these they this to was we were what "
    "when where which who why will with would you your".split()
)


@dataclass(frozen=True)
class Leak:
    """A held-back item's words found in a product file."""

    item_id: str
    path: str
    quoted: str  # the whole question, or the run of words found


def words(text: str) -> list[str]:
    """``text`` as lower-case words (letters and digits, with inner apostrophes and hyphens: ``pump-007``)."""
    return _WORD.findall(text.replace("\u2019", "'").lower())


def string_literals(source: str) -> list[str]:
    """Every string constant of a Python source, docstrings and the literal parts of f-strings included."""
    tree = ast.parse(source)
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def product_texts(root: Path, packages: Sequence[str] = PRODUCT_PACKAGES) -> dict[str, str]:
    """The product's words by file (relative path): a Python file's string literals, any other file's text.

    Raises:
        FileNotFoundError: a package folder that is not under ``root``.
    """
    texts: dict[str, str] = {}
    for package in packages:
        folder = root / package
        if not folder.is_dir():
            raise FileNotFoundError(f"no package folder {folder}")
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
                continue
            name = path.relative_to(root).as_posix()
            if path.suffix == ".py":
                texts[name] = "\n".join(string_literals(path.read_text(encoding="utf-8")))
            elif path.stat().st_size <= _MAX_DATA_BYTES:
                texts[name] = path.read_text(encoding="utf-8", errors="ignore")
    return texts


def _distinctive_runs(question: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    for start in range(len(question) - n + 1):
        run = tuple(question[start : start + n])
        if sum(word not in _COMMON for word in run) >= 2:
            yield run


def find_leaks(questions: Mapping[str, Sequence[str]], texts: Mapping[str, str], n: int = NGRAM) -> list[Leak]:
    """Where the ``questions`` (item id to its question texts) are quoted in ``texts`` (path to text).

    A question is quoted when all its words appear in a row, or when a distinctive run of ``n`` of them does
    (one with at least two words that are not among the commonest English words).
    """
    folded = {path: " " + " ".join(words(text)) + " " for path, text in texts.items()}
    leaks: list[Leak] = []
    for item_id, texts_of_item in questions.items():
        for question in texts_of_item:
            asked = words(question)
            if not asked:
                continue
            whole = " " + " ".join(asked) + " "
            runs = {" " + " ".join(run) + " " for run in _distinctive_runs(asked, n)}
            for path, text in folded.items():
                if whole in text:
                    leaks.append(Leak(item_id, path, question))
                    continue
                leaks += [Leak(item_id, path, run.strip()) for run in sorted(runs) if run in text]
    return leaks
