"""The evaluation harness: a golden question set, a pure scorer over recorded turns, and a runner."""

from evaluation.questions import Category, ExpectedCall, GoldenItem, Split, load_questions, rule_split, select_questions
from evaluation.scorer import (
    CategoryScore,
    EvalReport,
    SplitScore,
    Transcript,
    TrialScore,
    score_report,
    score_trial,
)

__all__ = [
    "Category",
    "CategoryScore",
    "EvalReport",
    "ExpectedCall",
    "GoldenItem",
    "Split",
    "SplitScore",
    "Transcript",
    "TrialScore",
    "load_questions",
    "rule_split",
    "score_report",
    "score_trial",
    "select_questions",
]
