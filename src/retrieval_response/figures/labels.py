"""The words of the analysis figures: target and correlation-type labels used in titles and panels."""

from __future__ import annotations

TARGET_LABELS = {
    "grade": "the LLM grade",
    "grade_expected": "the expected grade (grade log-probabilities)",
    "answer_f1": "the answer token F1",
    "answer_recall": "the answer's recall of gold tokens",
    "answer_contains": "the answer contains a gold answer",
}
"""Each target as a figure title names it."""
TARGET_SHORT = {
    "grade": "grade",
    "grade_expected": "expected grade",
    "answer_f1": "answer F1",
    "answer_recall": "answer recall",
    "answer_contains": "contains gold",
}
"""Each target as a panel title or a manifest entry names it."""
CORR_LABELS = {"spearman": "Spearman", "pearson": "Pearson", "kendall_b": "Kendall tau-b",
               "kendall_c": "Kendall tau-c"}
"""Each correlation type as titles and row labels name it."""
