"""With the real offline model (marked `local_model`; skipped when llama-cpp-python or the GGUF is absent)."""

import importlib.util
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from chat.provider import local_execution_settings, local_service
from kernel_setup import load_settings, open_app
from turn.runner import TurnRunner
from turn.sessions import SessionStore

DEFAULT_MODEL = Path(__file__).resolve().parents[3] / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL = Path(os.environ.get("TEST_LOCAL_MODEL", DEFAULT_MODEL))

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"),
    pytest.mark.skipif(not MODEL.is_file(), reason=f"no GGUF at {MODEL} (pumpops model install)"),
]


async def test_a_real_two_round_turn_calls_a_tool_and_answers_with_a_value_from_its_result(tmp_path: Path) -> None:
    path = tmp_path / "appsettings.json"
    path.write_text(
        json.dumps(
            {
                "Database": {"Path": "t.db"},
                "Qdrant": {"Path": ":memory:"},
                "Chat": {"Provider": "local"},
                "LocalModel": {"Path": str(MODEL)},
            }
        )
    )
    settings = load_settings(path, env={})
    async with open_app(settings) as app:
        runner = TurnRunner(
            app.kernel,
            local_service(settings),
            settings.agent,
            SessionStore(app.db),
            execution_settings=local_execution_settings(settings, seed=1),
            rejections=app.audit,
            num_ctx=settings.local_model.context_size,
        )
        result = await runner.run("Which pumps are offline?")
    assert result.tool_calls and all(c.status == "ok" for c in result.tool_calls)
    assert "PUMP-006" in result.answer
    assert result.usage.model_calls >= 2


def test_a_new_process_reuses_the_saved_prompt_prefix_and_scores_the_same(tmp_path: Path) -> None:
    from chat.local.llama_engine import LlamaEngine

    model = tmp_path / MODEL.name
    model.symlink_to(MODEL)  # the state file goes beside this link, not beside the real model
    fixed = "<|im_start|>system\n" + "You are PumpOps, an operations assistant for pump stations. " * 12
    fences = "<<UNTRUSTED-DATA 0badc0ffee>> and <</UNTRUSTED-DATA 0badc0ffee>>"
    system = fixed + f"Results arrive between {fences}.<|im_end|>\n"
    first = LlamaEngine(model, threads=2, context_size=2048)
    first.tool_start_logprob(system + "<|im_start|>user\nHow is PUMP-007?<|im_end|>\n<|im_start|>assistant\n")
    saved = tmp_path / (MODEL.name + ".prompt-cache.npz")
    assert saved.is_file()
    question = system + "<|im_start|>user\nWhich pumps are offline?<|im_end|>\n<|im_start|>assistant\n"
    expected = first.tool_start_logprob(question)
    second = LlamaEngine(model, threads=2, context_size=2048)  # as a new process would
    assert second.count_tokens(fixed) > 100 and len(second._restored) > 100  # restored when the model loaded
    saved_text = second._model().detokenize(second._restored).decode()
    assert saved_text.endswith("Results arrive between") and "0badc0ffee" not in saved_text  # no marker on disk
    assert abs(second.tool_start_logprob(question) - expected) < 1e-3


def test_drafted_greedy_text_is_the_models_own_and_the_drafts_are_really_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_LlamaDrafts` against llama.cpp itself: the same text as one token at a time, in fewer batches.

    The hint spells the row with other values, so its drafts are rejected where they differ and rolled back;
    what follows must not see them.
    """
    from chat.local import llama_engine
    from chat.local.qwen_format import STOP_STRINGS

    model = tmp_path / MODEL.name
    model.symlink_to(MODEL)  # the prompt cache goes beside this link
    row = "PUMP-007 | Transfer 3 | Station-C | vibration 9.4 mm/s | bearing 81 °C"
    decoy = "PUMP-008 | Transfer 8 | Station-B | vibration 2.4 mm/s | bearing 61 °C"
    prompt = f"<|im_start|>user\nCopy this row exactly, then stop:\n{row}<|im_end|>\n<|im_start|>assistant\n"
    options: dict[str, Any] = {"grammar": None, "max_tokens": 40, "temperature": 0.0, "seed": None}
    options["stop"] = STOP_STRINGS
    engine = llama_engine.LlamaEngine(model, threads=2, context_size=1024)
    engine.lookup_drafts = False
    one_at_a_time = "".join(engine.complete(prompt, **options))
    batches: list[int] = []
    rollbacks: list[int] = []
    verify, rollback = llama_engine._LlamaDrafts.verify, llama_engine._LlamaDrafts.rollback

    def counted_verify(self: Any, tokens: Sequence[int]) -> list[int]:
        batches.append(len(tokens))
        return verify(self, tokens)

    def counted_rollback(self: Any, keep: int) -> None:
        rollbacks.append(keep)
        rollback(self, keep)

    monkeypatch.setattr(llama_engine._LlamaDrafts, "verify", counted_verify)
    monkeypatch.setattr(llama_engine._LlamaDrafts, "rollback", counted_rollback)
    engine.lookup_drafts = True
    drafted = "".join(engine.complete(prompt, **options, hints=[decoy]))
    assert row in one_at_a_time
    assert drafted == one_at_a_time
    assert max(batches) > 1 and len(batches) < engine.count_tokens(drafted)  # drafts were read and kept
    assert rollbacks  # and some were rejected
