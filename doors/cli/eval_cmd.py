"""`pumpops eval`: run the golden question set against the chat model and report quality per category."""

from __future__ import annotations

from enum import Enum
from functools import partial
from pathlib import Path

import typer
from rich.table import Table

from doors.cli.common import CliState, fail, print_json, run, state
from doors.cli.safe_text import safe_text
from evaluation.questions import (
    Category,
    EvalQuestionsError,
    GoldenItem,
    Split,
    load_questions,
    select_questions,
)
from evaluation.runner import run_eval
from evaluation.scorer import OVERALL, CategoryScore, EvalReport, Transcript, score_report
from kernel_setup.settings import ChatProvider


class SplitChoice(str, Enum):
    """Which part of the golden set to run: both, or one (held-back items never tune the product)."""

    ALL = "all"
    TUNING = "tuning"
    HELD_BACK = "held_back"


def eval_command(
    ctx: typer.Context,
    provider: ChatProvider | None = typer.Option(
        None, "--provider", help="ollama, local or auto (default: Chat.Provider)."
    ),
    k: int = typer.Option(4, "--k", min=1, max=20, help="Trials per question, each with its own seed (pass^k)."),
    temperature: float | None = typer.Option(
        None, "--temperature", min=0.0, max=2.0, help="Sampling temperature (default: Ollama.Temperature)."
    ),
    category: list[Category] = typer.Option(
        [], "--category", help="Run this category's questions (repeatable; adds to --id)."
    ),
    only: list[str] = typer.Option([], "--id", help="Run this question (repeatable; adds to --category)."),
    limit: int | None = typer.Option(
        None, "--limit", min=1, help="At most this many questions per category (not counting --id ones)."
    ),
    questions: Path | None = typer.Option(
        None, "--questions", help="Another question file (default: the packaged set)."
    ),
    split: SplitChoice = typer.Option(
        SplitChoice.ALL, "--split", help="Run the tuning part, the held-back part, or all (each reported apart)."
    ),
    seed: int = typer.Option(1, "--seed", help="Seed of the first trial; trial t uses seed + t."),
    as_json: bool = typer.Option(False, "--json", help="Print the report JSON only."),
) -> None:
    """Score tool selection, arguments, facts, groundedness, irrelevance, calls, latency and pass^k per category.

    Every question runs in a fresh session on a throwaway copy of the sample database.
    Without --category or --id every question runs; with them, those categories' questions and those ids.
    The set's tuning and held-back parts are reported apart; --split runs one of them. The held-back part is
    never used to choose thresholds, words or prompts: read its failures, do not tune on them.
    Example: pumpops eval --provider local --k 2 --category single_tool --category irrelevance --split held_back
    Settings apply as in every command: `pumpops --settings FILE eval ...` (e.g. Agent.StructuredAnswers) measures them.
    """
    cli = state(ctx)
    settings = cli.settings()
    items = _selected(cli, questions, category, only, limit, split)
    temp = settings.ollama.temperature if temperature is None else temperature
    if temp == 0 and k > 1 and not as_json:
        cli.err_console.print("[yellow]temperature 0: every trial is the same, so pass^k equals pass^1[/]")
    progress = None if as_json else partial(_print_trial, cli)
    done = run(
        cli, run_eval(settings, items, k=k, temperature=temp, provider=provider, base_seed=seed, on_trial=progress)
    )
    report = score_report(
        items,
        done.transcripts,
        k=k,
        provider=done.provider.value,
        temperature=temp,
        seeds=[seed + t for t in range(k)],
        warmup_s=done.warmup_s,
        machine_rates=done.machine_rates,
        split=split.value,
        structured_answers=settings.agent.structured_answers,
    )
    if as_json:
        print_json(cli, report.model_dump(mode="json"))
    else:
        print_report(cli, report)


def _selected(
    cli: CliState,
    questions: Path | None,
    category: list[Category],
    only: list[str],
    limit: int | None,
    split: SplitChoice,
) -> list[GoldenItem]:
    """The questions to run; a missing or empty set, or a selection matching nothing, fails with the reason."""
    try:
        golden = load_questions(questions)
        part = None if split == SplitChoice.ALL else Split(split.value)
        items = select_questions(golden, category, only, limit, split=part)
    except EvalQuestionsError as exc:
        fail(cli, str(exc))
    if not golden:
        fail(cli, "The question set has no items.")
    if not items:
        within = [i for i in golden if part is None or i.split == part]
        present = ", ".join(dict.fromkeys(i.category.value for i in within))
        asked = ", ".join(c.value for c in category)
        of_part = "" if part is None else f" {part.value}"
        fail(cli, f"No question to run: the set has no{of_part} {asked} question (its categories: {present}).")
    return items


def _print_trial(cli: CliState, item: GoldenItem, transcript: Transcript) -> None:
    """One line per finished trial on stderr: the tools it called and its latency, or why it failed."""
    result = transcript.result
    if result is None:
        cli.err_console.print(
            f"[red]✗[/] {item.id} #{transcript.trial}: {safe_text(transcript.error or '')}", highlight=False
        )
        return
    calls = ", ".join(c.name for c in result.tool_calls) or "no tool"
    cli.err_console.print(
        f"[dim]{item.id} #{transcript.trial}: {calls} ({transcript.latency_s:.1f} s)[/]", highlight=False
    )


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def print_report(cli: CliState, report: EvalReport) -> None:
    """The report for people: the table per split and category, the cold start, the machine's rates, the failures.

    Each part of the set run (tuning, held back) has its own rows and overall; with both, a last row gives the
    overall of all.
    """
    cli.console.print(_report_table(report))
    if report.warmup_s is not None:
        cli.console.print(f"[dim]cold start (unscored warm-up turn, not in the latencies): {report.warmup_s:.1f} s[/]")
    if report.machine_rates:
        reads = " → ".join(f"{r.prompt_tokens_per_s:.0f}" for r in report.machine_rates)
        writes = " → ".join(f"{r.written_tokens_per_s:.1f}" for r in report.machine_rates)
        whens = " → ".join(r.when for r in report.machine_rates)
        cli.console.print(
            f"[dim]llama.cpp on this machine ({whens} the trials): reads {reads} prompt tokens/s, "
            f"writes {writes} tokens/s[/]",
            highlight=False,
        )
    failed = [t for t in report.trials if not t.passed]
    for trial in failed[:20]:
        cli.console.print(
            f"[dim]✗ {trial.item_id} ({trial.split.value}) #{trial.trial}: {safe_text('; '.join(trial.problems))}[/]",
            highlight=False,
        )


def _report_table(report: EvalReport) -> Table:
    """The scores per split and category; with both splits run, a last section gives the overall of all."""
    shape = " · structured answers" if report.structured_answers else ""
    table = Table(title=f"pumpops eval · {report.provider} · k={report.k} · temperature {report.temperature:g}{shape}")
    sections: list[tuple[str, list[CategoryScore]]] = [(s.split.value, s.categories) for s in report.splits]
    if len(sections) != 1:
        sections.append(("all", [c for c in report.categories if c.category == OVERALL or not report.splits]))
    for header in (
        "split",
        "category",
        "items",
        "tool sel.",
        "args",
        "facts",
        "grounded",
        "irrelev.",
        "refusal",
        "no claim",
        "calls/q",
        "latency p50",
        "pass^1",
        f"pass^{report.k}",
    ):
        table.add_column(header, justify="left" if header in ("split", "category") else "right")
    for part, categories in sections:
        for c in categories:
            table.add_row(
                part,
                c.category,
                str(c.items),
                _pct(c.tool_selection),
                _pct(c.argument_accuracy),
                _pct(c.fact_recall),
                _pct(c.groundedness),
                _pct(c.irrelevance),
                _pct(c.refusal),
                _pct(c.no_false_claim),
                f"{c.model_calls:.1f}",
                f"{c.latency_median_s:.1f} s",
                _pct(c.pass_1),
                _pct(c.pass_k),
                style="bold" if c.category == OVERALL else None,
            )
        table.add_section()
    return table
