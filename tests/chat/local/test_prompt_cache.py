"""The local model's prompt prefix on disk: saved as plain arrays, tied to the model file, best effort."""

import os
from pathlib import Path

import numpy as np

from chat.local.prompt_cache import FORMAT, PromptCache, covered, worth_saving


def model_file(tmp_path: Path) -> Path:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"weights")
    return model


def test_a_saved_prefix_loads_back_for_the_same_model_file_context_and_version(tmp_path: Path) -> None:
    cache = PromptCache.beside(model_file(tmp_path), 8192, "0.3.36")
    assert cache.path == tmp_path / "m.gguf.prompt-cache.npz" and cache.load() is None
    assert cache.save([5, 6, 7], b"\x00kv-state\xff")
    assert cache.load() == ([5, 6, 7], b"\x00kv-state\xff")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf", "m.gguf.prompt-cache.npz"]  # no temporary left
    with np.load(cache.path, allow_pickle=False) as data:  # plain arrays: nothing in the file can run
        assert sorted(data.files) == ["fingerprint", "ids", "kv"]


def test_a_file_for_another_model_context_or_version_is_ignored(tmp_path: Path) -> None:
    model = model_file(tmp_path)
    PromptCache.beside(model, 8192, "0.3.36").save([1], b"kv")
    assert PromptCache.beside(model, 4096, "0.3.36").load() is None
    assert PromptCache.beside(model, 8192, "0.3.37").load() is None
    current = PromptCache.beside(model, 8192, "0.3.36")
    older = PromptCache(path=current.path, fingerprint=current.fingerprint.replace(f"{FORMAT}:", "1:", 1))
    assert older.save([1], b"kv") and current.load() is None  # written by a build that saved something else
    model.write_bytes(b"other weights")  # a re-installed model: size and modification time differ
    os.utime(model, ns=(1, 1))
    assert PromptCache.beside(model, 8192, "0.3.36").load() is None


def test_a_damaged_file_is_ignored_and_an_unwritable_folder_only_skips_saving(tmp_path: Path) -> None:
    cache = PromptCache.beside(model_file(tmp_path), 8192, "v")
    cache.path.write_bytes(b"PK\x03\x04 truncated")
    assert cache.load() is None
    missing = PromptCache(path=tmp_path / "no-such-folder" / "c.npz", fingerprint="v")
    assert missing.save([1], b"kv") is False and not (tmp_path / "no-such-folder").exists()


def test_a_prefix_is_good_enough_when_only_the_per_turn_tail_differs() -> None:
    system = list(range(2000))
    assert covered([*system, 1, 2], [*system, 3]) == 2000 and covered([], system) == 0
    assert worth_saving([], system)  # nothing saved yet
    question = [*system, *range(60)]
    assert not worth_saving(system, question)  # only the question is new: reused, not saved again
    assert not worth_saving(question, [*system, *range(100, 140)])  # another question: the same
    changed_tools = [*system[:300], *([-1] * 1700), *range(60)]
    assert worth_saving(system, changed_tools)  # most of it is new: saved anew
    short = list(range(150))
    assert worth_saving([], short) and not worth_saving(short[:140], short)
