"""The evaluation harness: a golden question set, a pure scorer over recorded turns, and a runner."""

from evaluation.questions import Category, ExpectedCall, GoldenItem, load_questions, select_questions
from evaluation.scorer import CategoryScore, EvalReport, Transcript, TrialScore, score_report, score_trial

__all__ = [
    "Category",
    "CategoryScore",
    "EvalReport",
    "ExpectedCall",
    "GoldenItem",
    "Transcript",
    "TrialScore",
    "load_questions",
    "score_report",
    "score_trial",
    "select_questions",
]
