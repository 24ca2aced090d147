"""The offline model's speed on this machine, and a warm two-round turn measured against it. Prints figures.

Baseline: llama.cpp's raw prompt-reading and generation rates (tokens/s) for the installed GGUF,
measured in this run on a fixed text. Turns: warm two-round turns (route, call, tool, answer)
through the real runner, filters and audit, each with its time, tool calls and token counts, and
the median; last, what 500 prompt tokens and 100 answer tokens take at the baseline rates. Target
(issue #7): a warm two-round turn <= 10 s median on 2 cores; the baseline rates say how fast the
machine was, so runs on different days compare.

Needs the ``local`` extra and the model (``pumpops model install``); otherwise it says so and exits 0.

    .venv/bin/python bench/local_model_bench.py [--settings appsettings.json] [--question Q ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chat.local.llama_engine import measure_rates  # noqa: E402
from chat.provider import local_model_problem  # noqa: E402
from kernel_setup import load_settings, open_app  # noqa: E402
from kernel_setup.settings import Settings  # noqa: E402
from turn.factory import runner_for  # noqa: E402

# One question per single-tool shape of the golden set (lists, summary, alarms, details, readings, trend,
# work orders), so the median is of the same mix as `pumpops eval --category single_tool`.
QUESTIONS = [
    "Which pumps are offline?",
    "How is the system doing overall?",
    "Are there any critical alarms right now?",
    "How is PUMP-007 doing?",
    "Which pumps are at Station-C?",
    "Show me the latest vibration readings across the fleet, worst first.",
    "Is the bearing temperature of PUMP-007 getting worse?",
    "Are there any open work orders?",
]


async def turns(settings: Settings, questions: list[str]) -> list[tuple[str, float, int, int, int]]:
    """Each question as a warm turn: (question, seconds, prompt tokens, completion tokens, tool calls)."""
    out = []
    async with open_app(settings) as app:
        runner = runner_for(app)
        await runner.run("Hello", principal="bench")  # loads the model and caches the tool list
        for question in questions:
            started = time.perf_counter()
            result = await runner.run(question, principal="bench")
            seconds = time.perf_counter() - started
            usage = result.usage
            out.append((question, seconds, usage.prompt_tokens, usage.completion_tokens, len(result.tool_calls)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", type=Path, default=ROOT / "appsettings.json")
    parser.add_argument("--question", action="append", dest="questions")
    args = parser.parse_args()
    base = load_settings(args.settings)
    problem = local_model_problem(base)
    if problem:
        print(f"skipped: {problem}")
        return
    model = base.resolve(base.local_model.path)
    read, write = measure_rates(model, base.local_model.threads)
    print(f"baseline llama.cpp on this machine: reads {read:.0f} prompt tokens/s, writes {write:.1f} tokens/s")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "appsettings.json"
        overrides = {
            "Database": {"Path": "bench.db"},
            "Qdrant": {"Path": ":memory:"},
            "Chat": {"Provider": "local"},
            "LocalModel": {"Path": str(model)},
        }
        path.write_text(json.dumps(overrides))
        results = asyncio.run(turns(load_settings(path), args.questions or QUESTIONS))
    for question, seconds, prompt, completion, calls in results:
        print(f"{seconds:6.1f} s  {calls} call(s)  {prompt:5d} prompt / {completion:3d} completion tokens  {question}")
    two_round = [r for r in results if r[4] > 0]
    if two_round:
        median = statistics.median(r[1] for r in two_round)
        print(f"warm two-round turn: median {median:.1f} s over {len(two_round)} (target <= 10 s)")
    print(
        "prompt tokens are counted per model call, including the cached prefix llama.cpp does not read again; "
        f"at the baseline rates, 500 new prompt tokens take {500 / read:.1f} s "
        f"and 100 answer tokens {100 / write:.1f} s"
    )


if __name__ == "__main__":
    main()
