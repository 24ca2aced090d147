"""How the offline model routes each wording: a call or an answer, against the start score alone. Prints figures.

For every question: the start score (the model's log-probability of opening its turn like a call), the
message's relevance to the tools' subjects where routing asked for it, and the decision, all from the
product's own `LocalChatCompletion.route` (the first step of a turn, without writing the call). Questions:
the first turns of the golden set's tuning part (a call expected unless the item is small talk; held-back
items never choose a threshold) and other wordings that are not in it: operator questions, and trivia and
small talk. Baseline, in the same run: the start score alone
against `tool_start_threshold`. Each question is scored under ``--markers`` services, each with its own
random fence marker (the marker moves a score by up to about 0.2), so a decision that flips shows as such.

The relevance searches the manuals index of the settings' `Qdrant` section (`pumpops ingest` first; an
empty index leaves only the tool descriptions). The model reads the system prompt once (about a minute
without the prompt cache), then each question takes about a second.

Needs the ``local`` extra and the model (``pumpops model install``); otherwise it says so and exits 0.

    .venv/bin/python bench/routing_bench.py [--settings appsettings.json] [--markers 2] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from semantic_kernel.connectors.ai.function_calling_utils import (  # noqa: E402
    kernel_function_metadata_to_function_call_format,
)
from semantic_kernel.contents.chat_history import ChatHistory  # noqa: E402

from chat.local.settings import Route  # noqa: E402
from chat.provider import local_execution_settings, local_model_problem, local_service  # noqa: E402
from chat.relevance import DomainRelevance  # noqa: E402
from evaluation.questions import Split, load_questions  # noqa: E402
from kernel_setup import load_settings, open_app  # noqa: E402
from kernel_setup.settings import ChatProvider, DatabaseSettings, Settings  # noqa: E402
from kernel_setup.shaping import new_marker, system_prompt  # noqa: E402

# Not in the golden set: operator questions that need the registry or the manuals, many of them terse.
OPERATOR = [
    "Any problems?",
    "What needs fixing?",
    "Status?",
    "Is anything broken?",
    "Which pump is worst?",
    "Any alarms?",
    "What's going on at Station-B?",
    "Is PUMP-001 running?",
    "How hot is PUMP-007?",
    "What happened to PUMP-006?",
    "What's wrong with PUMP-004?",
    "Any open tickets?",
    "How many pumps do we have?",
    "What's the flow of PUMP-003?",
    "What should I check today?",
    "Why is my pump vibrating?",
    "How do I replace a mechanical seal?",
    "What causes cavitation?",
    "Is PUMP-008 healthy?",
    "What's the pressure on PUMP-002?",
    "Are any pumps tripped?",
    "Which station has problems?",
    "Give me a quick health check.",
    "How's the fleet?",
    "Anything I should worry about?",
    "Has anything alarmed overnight?",
    "Which pumps are running hot?",
    "What's PUMP-005's vibration?",
    "Any work scheduled for PUMP-004?",
    "Is Station-A OK?",
    "What's broken?",
    "Show me the alarms.",
    "Which bearings are overheating?",
    "Where should the crew go first?",
    "Is the seal on PUMP-003 leaking?",
    "How long has PUMP-006 been down?",
]
# Not in the golden set: trivia, requests outside pump operations and small talk; none should call a tool.
OFF_TOPIC = [
    "Who won the world cup?",
    "What's 2+2?",
    "Is it going to rain?",
    "Translate hello into Spanish.",
    "What time is it?",
    "Recommend a good movie.",
    "How do I bake bread?",
    "What is the speed of light?",
    "Tell me about the Roman Empire.",
    "Can you help me write an email to my boss?",
    "What's your favourite colour?",
    "Explain quantum computing.",
    "Who is the president of the USA?",
    "Sing me a song.",
    "What is the meaning of life?",
    "How tall is Mount Everest?",
    "Write a haiku about autumn.",
    "What's a good recipe for dinner?",
    "What's the best programming language?",
    "Tell me a fun fact.",
    "How far is the moon?",
    "What day is it today?",
    "Can you recommend a book?",
    "What's the population of Germany?",
    "Who painted the Mona Lisa?",
    "How do I make coffee?",
    "What is love?",
    "Do you like music?",
    "Summarize the news.",
    "What's the stock price of Apple?",
    "How do I lose weight?",
    "Tell me a story.",
    "What language do they speak in Brazil?",
    "Are you a robot?",
    "Let's play a game.",
    "What's the square root of 144?",
]


@dataclass(frozen=True)
class Question:
    group: str  # "golden" or "other"
    text: str
    wants_call: bool


@dataclass(frozen=True)
class Scored:
    question: Question
    routes: tuple[Route, ...]  # one per marker


def questions() -> list[Question]:
    # The tuning part only: the routing thresholds are chosen with this bench, and held-back items never choose them.
    tuning = [item for item in load_questions() if item.split == Split.TUNING and not item.setup]
    golden = [Question("golden", item.question, bool(item.calls)) for item in tuning]
    return (
        golden
        + [Question("other", text, True) for text in OPERATOR]
        + [Question("other", text, False) for text in OFF_TOPIC]
    )


async def score(settings: Settings, asked: list[Question], markers: int) -> list[Scored]:
    """Each question's route under ``markers`` services (one fence marker each)."""
    routes: list[list[Route]] = [[] for _ in asked]
    async with open_app(settings) as app:
        # In the kernel's order, as a turn advertises them (`tool_definitions` sorts by name): the prompt, and so
        # the start score, depends on it.
        tools = [
            kernel_function_metadata_to_function_call_format(f) for f in app.kernel.get_full_list_of_function_metadata()
        ]
        execution = local_execution_settings(settings)
        execution.tools = tools
        for _ in range(markers):
            service = local_service(settings, DomainRelevance(app.manuals))
            for position, question in enumerate(asked):
                history = ChatHistory(system_message=system_prompt(new_marker()))
                history.add_user_message(question.text)
                route = await service.route(history, execution)
                if route is None:
                    raise SystemExit("the loaded engine has no start score; native routing cannot be measured")
                routes[position].append(route)
    return [Scored(question, tuple(found)) for question, found in zip(asked, routes, strict=True)]


def report(results: list[Scored], threshold: float, verbose: bool) -> None:
    for group in ("golden", "other"):
        rows = [r for r in results if r.question.group == group]
        for wants_call, label in ((True, "call expected"), (False, "no call expected (small talk, trivia)")):
            part = [r for r in rows if r.question.wants_call == wants_call]
            if not part:
                continue
            trials = sum(len(r.routes) for r in part)
            routed = sum(route.call == wants_call for r in part for route in r.routes)
            alone = sum((route.start >= threshold) == wants_call for r in part for route in r.routes)
            print(
                f"{group:6s} {label:38s} {len(part):3d} questions: routed right {routed:3d} of {trials} "
                f"({routed / trials:.2f}); start score alone {alone:3d} ({alone / trials:.2f})"
            )
            for r in part:
                right = sum(route.call == wants_call for route in r.routes)
                if verbose or right < len(r.routes):
                    starts = [route.start for route in r.routes]
                    measured = [route.relevance for route in r.routes if route.relevance is not None]
                    relevance = f"{measured[0]:.2f}" if measured else "  - "
                    mark = "ok  " if right == len(r.routes) else "MISS"
                    print(
                        f"    {mark} start {min(starts):6.2f}..{max(starts):6.2f}  relevance {relevance}"
                        f"  right {right}/{len(r.routes)}  {r.question.text}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", type=Path, default=ROOT / "appsettings.json")
    parser.add_argument("--markers", type=int, default=2, help="services (fence markers) per question")
    parser.add_argument("--verbose", action="store_true", help="print every question, not only the misses")
    args = parser.parse_args()
    base = load_settings(args.settings)
    problem = local_model_problem(base)
    if problem:
        print(f"skipped: {problem}")
        return
    with tempfile.TemporaryDirectory() as folder:
        # A throwaway database (the sample fleet); the configured model and manuals index.
        settings = base.model_copy(
            update={
                "database": DatabaseSettings(path=str(Path(folder) / "bench.db")),
                "chat": base.chat.model_copy(update={"provider": ChatProvider.LOCAL}),
            }
        )
        results = asyncio.run(score(settings, questions(), max(1, args.markers)))
    threshold = local_execution_settings(settings).tool_start_threshold
    report(results, threshold, args.verbose)


if __name__ == "__main__":
    main()
