"""The registry of targets: what the retrieval measures are correlated with, and what the judge is checked by.

One entry per target, in table order. A target is a numeric (or boolean, read as 0/1) column of
the analysis table; a sample whose target is null is left out of that target's statistics. The
analysis (:mod:`.correlation_tables`), the judge's check against gold answers
(:mod:`retrieval_response.agreement.judge_gold`) and the figures' words (:mod:`retrieval_response.figures.labels`) read
their target names from here; the config schema's ``analysis.targets`` enum is kept equal to
:data:`TARGETS` by tests/test_config_schema.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Target:
    """One target: its column's dtype in the analysis table, what it is (``description``), how a
    figure title (``label``) and a panel (``short``) name it, whether it is a grade of the
    LLM judge (``judge``: checked against the judge-free targets in the judge-agreement table) and
    the column that says why a grade is missing (``status``: ``graded`` or the reason)."""

    dtype: pl.DataType
    description: str
    label: str
    short: str
    judge: bool = False
    status: str | None = None


TARGETS: dict[str, Target] = {
    "grade": Target(pl.Int64, "the paper's 1-5 LLM grade of the top-K answer against the ideal answer",
                    "the LLM grade", "grade", judge=True, status="status"),
    "grade_expected": Target(pl.Float64, "probability-weighted grade sum_g g p(g) / sum_g p(g) from the grader's "
                             "log-probabilities of the digits 1..5", "the expected grade (grade log-probabilities)",
                             "expected grade", judge=True, status="status"),
    "grade_gold": Target(pl.Int64, "the 1-5 LLM grade of the top-K answer against the query's gold answers "
                         "(llm.grade_reference: both)", "the LLM grade against the gold answers", "gold grade",
                         judge=True, status="status_gold"),
    "grade_gold_expected": Target(pl.Float64, "probability-weighted grade of grade_gold from its log-probabilities",
                                  "the expected gold grade (grade log-probabilities)", "expected gold grade",
                                  judge=True, status="status_gold"),
    "grade_context": Target(pl.Int64, "the 1-5 LLM grade of a trace's answer against its retrieved texts, with no "
                            "ideal answer (traces: no positives to write one from)", "the LLM grade against the "
                            "retrieved texts", "context grade", judge=True, status="status_context"),
    "grade_context_expected": Target(pl.Float64, "probability-weighted grade of grade_context from its "
                                     "log-probabilities", "the expected context grade (grade log-probabilities)",
                                     "expected context grade", judge=True, status="status_context"),
    "feedback": Target(pl.Float64, "the users' feedback on a trace's answer (a number, or a label mapped to one)",
                       "the users' feedback", "feedback"),
    "answer_f1": Target(pl.Float64, "token F1 of the top-K answer against the gold answers (max over them)",
                        "the answer token F1", "answer F1"),
    "answer_recall": Target(pl.Float64, "share of a gold answer's tokens found in the top-K answer (max over gold "
                            "answers)", "the answer's recall of gold tokens", "answer recall"),
    "answer_contains": Target(pl.Float64, "1 if a normalised gold answer is a substring of the normalised top-K "
                              "answer, else 0", "the answer contains a gold answer", "contains gold"),
}
"""Every target, in table order."""
NAMES = tuple(TARGETS)
"""The target names, in table order."""
JUDGE_GRADES = tuple(name for name, target in TARGETS.items() if target.judge)
"""The LLM judge's grades among the targets, in table order."""
