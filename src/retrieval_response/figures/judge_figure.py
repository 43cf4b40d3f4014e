"""Figure of the judge-agreement table: per subset, each statistic as a point with its 95% interval."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from retrieval_response.figures.labels import UNDEFINED
from retrieval_response.infra.atomic import atomic_path

DPI = 150
NO_EXPECTED = "no expected grade (the grader returned no log-probabilities)"
PANELS = tuple(
    (name, f"{name}_ci_low", f"{name}_ci_high", label, limits, undefined)
    for name, label, limits, undefined in (
        ("spearman", "Spearman ρ\n(grade vs F1 level)", (-1.0, 1.0),
         "no graded answer with a gold answer, or the grade or the F1 level constant"),
        ("auc_grade", "AUC of the grade\n(contains gold or not)", (0.0, 1.0),
         "every answer contains a gold answer, or none does"),
        ("auc_grade_expected", "AUC of the expected grade\n(contains gold or not)", (0.0, 1.0),
         f"{NO_EXPECTED}, or every answer contains a gold answer, or none does"),
        ("auc_grade_gold", "AUC of the gold grade\n(contains gold or not)", (0.0, 1.0),
         "every answer contains a gold answer, or none does"),
        ("auc_grade_gold_expected", "AUC of the expected\ngold grade (contains gold)", (0.0, 1.0),
         f"{NO_EXPECTED}, or every answer contains a gold answer, or none does"),
        ("spearman_recall_grade", "Spearman ρ\n(grade vs answer recall)", (-1.0, 1.0),
         "no graded answer with a gold answer, or the grade or the recall constant"),
        ("spearman_recall_grade_expected", "Spearman ρ\n(expected grade vs recall)", (-1.0, 1.0),
         f"{NO_EXPECTED}, or it or the recall constant"),
        ("ideal_f1", "Ideal answers' token F1\n(mean vs gold)", (0.0, 1.0), "no ideal answer with a gold answer"),
        ("ideal_contains", "Ideal answers containing\na gold answer (share)", (0.0, 1.0),
         "no ideal answer with a gold answer"),
    )
)
"""Each panel: statistic, its interval's columns, axis label, x limits and why the statistic can
be undefined (the words an undefined point shows)."""
TITLE = "LLM judge vs gold answers (points: estimate, bars: 95% bootstrap interval over query ids)"


def row_label(row: dict) -> str:
    """``"<subset>  (n=<samples>, <queries> queries)"``."""
    return f"{row['subset']}  (n={row['n_samples']}, {row['n_queries']} queries)"


def as_floats(values: pl.Series) -> np.ndarray:
    """A Float64 column as numbers, null -> NaN (not drawn)."""
    return values.cast(pl.Float64).fill_null(float("nan")).to_numpy()


def drawn_panels(table: pl.DataFrame) -> list[tuple]:
    """The :data:`PANELS` to draw: every one but the gold grade's when no row has a value for it
    (a run graded against ideal answers only gives no gold grade); an undefined statistic of a
    grade the run gave keeps its panel, which says why."""
    return [panel for panel in PANELS if "gold" not in panel[0] or table[panel[0]].drop_nulls().len() > 0]


def plot_judge_agreement(table: pl.DataFrame, path: str | os.PathLike, *, reason: str | None = None) -> None:
    """Draw ``table`` (judge_agreement's columns) to the PNG ``path``: one panel per statistic with a
    value (:func:`drawn_panels`), one row per subset.

    The ``all`` row comes last (at the bottom) with a separating line. An undefined statistic
    (null) says "undefined" and why, in its panel's words (:data:`PANELS`). An empty table gives a
    figure stating ``reason``.
    """
    if table.height == 0:
        figure = Figure(figsize=(8, 2.5), dpi=DPI)
        figure.suptitle(TITLE, fontsize=9)
        figure.text(0.5, 0.45, reason or "no query with a gold answer", ha="center", va="center", fontsize=11, wrap=True)
        save(figure, path)
        return
    rows = table.to_dicts()
    positions = np.arange(len(rows))[::-1]
    panels = drawn_panels(table)
    figure = Figure(figsize=(2.3 * len(panels), 1.6 + 0.45 * len(rows)), dpi=DPI, layout="constrained")
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (value, low, high, label, limits, undefined) in zip(axes, panels, strict=True):
        centre, lower, upper = (as_floats(table[column]) for column in (value, low, high))
        errors = np.vstack([centre - lower, upper - centre])
        ax.errorbar(centre, positions, xerr=np.where(np.isnan(errors), 0.0, errors), fmt="o", color="tab:blue",
                    ecolor="tab:gray", capsize=3)
        for x, y in zip(centre, positions, strict=False):
            if np.isnan(x):
                ax.text(sum(limits) / 2, y, textwrap.fill(f"{UNDEFINED}: {undefined}", 34), ha="center", va="center",
                        fontsize=6.5, color="#555555")
            else:
                ax.annotate(f"{x:.2f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
        ax.set_xlim(*limits)
        ax.axvline(0.0, color="black", linewidth=0.5)
        ax.set_xlabel(label, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        if len(rows) > 1:
            ax.axhline(0.5, color="black", linewidth=0.5, linestyle=":")
    axes[0].set_yticks(positions, [row_label(row) for row in rows], fontsize=8)
    axes[0].set_ylim(-0.7, len(rows) - 0.3)
    figure.suptitle(TITLE, fontsize=10)
    save(figure, path)


def save(figure: Figure, path: str | os.PathLike) -> None:
    """Write ``figure`` as PNG to ``path`` atomically."""
    FigureCanvasAgg(figure)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI)
