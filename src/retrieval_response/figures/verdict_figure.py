"""The verdict figures: each measure's correlation with its interval, ordered, with the verdict's
decision marked, a panel per family (target x subset x ranker x segment) of ``verdict.parquet``.

- ``verdict.png``: the segment of all samples (:data:`~retrieval_response.decide.summary.HEADLINE_SEGMENT`);
  panel rows = subset x ranker, columns = targets. The figure a reader looks at first.
- ``verdict_fit.png``: the same on the narrow (K < Np) and wide (K >= Np) segments; columns =
  target x {narrow, wide} (wrapped), the detail.

In a panel the measures the verdict compared (the recommended one, possibly best, worse) come
first, by correlation from the highest down; the undecided ones follow (those with a correlation by
correlation), each with the few words of its reason written beside it
(:func:`~retrieval_response.decide.reasons.short_reason`). Markers and colours stand for the
decision (:data:`DECISION_STYLE`, explained in the legend); the recommended measure's panel
title carries its margin.
A panel without a drawn measure says why: "cannot decide" and the reason (the family is in the
table, nothing of it could be compared), "undefined" (the target has no value in that subset and
segment: no family, listed in the manifest) or "not run" (no sample of that ranker there).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from retrieval_response.analysis.targets import NAMES
from retrieval_response.decide.reasons import short_reason
from retrieval_response.decide.summary import HEADLINE_SEGMENT, number
from retrieval_response.figures.frame import (
    EDGE_INCHES,
    LABEL_PAD_POINTS,
    POINT_INCHES,
    TICK_PAD_POINTS,
    TITLE_PAD_POINTS,
    text_inches,
    widest,
)
from retrieval_response.figures.inputs import FIT_SEGMENTS, require
from retrieval_response.figures.labels import CANNOT_DECIDE, CORR_LABELS, NOT_RUN, TARGET_SHORT, UNDEFINED
from retrieval_response.figures.layout import figure_footer
from retrieval_response.figures.manifest import Manifest, png_data_uri
from retrieval_response.figures.plotting import (
    DPI,
    FONT,
    FONT_NOTE,
    FONT_TITLE,
    FOREST_ROW_INCHES,
    MAX_WIDTH_INCHES,
    NOTE_COLOUR,
    place_panel_grid,
    value_limits,
    wrap,
)
from retrieval_response.figures.run_end import VERDICT_DETAIL, VERDICT_FIGURE

VERDICT_COLUMNS = ("target", "subset", "E", "segment", "corr_type", "measure", "n_queries", "value", "ci_low",
                   "ci_high", "decision", "recommended", "margin", "reason_code", "reason", "same_as")
DECISION_STYLE = {
    "recommended": {"marker": "*", "color": "#1a9850", "markersize": 11,
                    "label": "monitor this: the smallest margin to the best, the cheapest of ties"},
    "possibly best": {"marker": "o", "color": "#4575b4", "markersize": 6,
                      "label": "possibly best: no measure surely better (family-wise 95 %)"},
    "worse": {"marker": "v", "color": "#d73027", "markersize": 7,
              "label": "worse: some measure surely better (family-wise 95 %)"},
    "undecided": {"marker": "s", "color": "#8c8c8c", "markersize": 5, "markerfacecolor": "none",
                  "label": "undecided: not compared, the reason beside it"},
}
"""Marker, colour and legend entry of the recommended measure and of each decision."""
PLOT_INCHES = 1.75  # the data area of a panel (the measure labels come on top)
PANEL_GAP_INCHES = 0.2  # between a panel and the measure labels of the next


@dataclass(frozen=True)
class VerdictPanel:
    """One family's panel: ``rows`` (measure, value, ci_low, ci_high, decision, label) top to
    bottom, or none and a ``note`` saying why."""

    title: str
    rows: list[dict]
    note: str = ""


def _panel_rows(family: pl.DataFrame) -> list[dict]:
    """The family's measures top to bottom: compared ones by correlation (highest first), then the
    undecided ones with a correlation (by correlation), then those without; undecided ones
    labelled with the short form of their reason."""
    finite = pl.col("value").is_not_null() & pl.col("value").is_not_nan()
    ordered = family.with_columns(
        undecided=pl.col("decision") == "undecided", has_value=finite,
    ).sort(["undecided", "has_value", "value"], descending=[False, True, True], nulls_last=True)
    return [{**row, "label": short_reason(row["reason_code"], row["same_as"]) if row["undecided"] else "",
             "style": "recommended" if row["recommended"] else row["decision"]} for row in ordered.to_dicts()]


def _panel(verdict: pl.DataFrame, target: str, subset: str, ranker: str, segment: str, title: str,
           scope: str, manifest: Manifest) -> VerdictPanel:
    family = verdict.filter(pl.col("target") == target, pl.col("subset") == subset, pl.col("E") == ranker,
                            pl.col("segment") == segment)
    if family.is_empty():
        ranked_there = verdict.filter(pl.col("subset") == subset, pl.col("E") == ranker,
                                      pl.col("segment") == segment).height
        if not ranked_there:
            return VerdictPanel(title, [], f"{NOT_RUN}: no sample of {ranker} in this subset and segment")
        reason = f"{UNDEFINED}: no sample with {TARGET_SHORT[target]} here"
        manifest.leave_out(scope, reason, target=target, subset=subset, E=ranker, segment=segment)
        return VerdictPanel(title, [], reason)
    rows = _panel_rows(family)
    monitor = next((r for r in rows if r["recommended"]), None)
    margin = f", margin {number(monitor['margin'], signed=False)}" if monitor else ""
    title = f"{title}\n{family['n_queries'][0]} queries{margin}"
    if not any(np.isfinite(r["value"]) for r in rows if r["value"] is not None):
        reasons = sorted({r["label"] for r in rows})
        return VerdictPanel(title, [], f"{CANNOT_DECIDE}: " + "; ".join(reasons))
    return VerdictPanel(title, rows)


def _figure(grid: list[tuple[str, list[VerdictPanel]]], *, title: str, footer: str) -> Figure:
    """Panel rows (label, panels) wrapped to the page width, one x scale for every panel; a fixed
    layout (:func:`~.plotting.place_panel_grid`): each panel its measure labels and PLOT_INCHES."""
    y_left = widest([r["measure"] for _, panels in grid for p in panels for r in p.rows], FONT) + TICK_PAD_POINTS * POINT_INCHES
    start = EDGE_INCHES + text_inches("Hg", FONT_TITLE, weight="bold")[1] + LABEL_PAD_POINTS * POINT_INCHES
    column = y_left + PLOT_INCHES + PANEL_GAP_INCHES
    fit = int((MAX_WIDTH_INCHES - start - EDGE_INCHES) // column)
    n_cols = max(1, min(max(len(panels) for _, panels in grid), fit))
    wrapped = [(label, panels[i:i + n_cols]) for label, panels in grid for i in range(0, len(panels), n_cols)]
    width = min(MAX_WIDTH_INCHES, max(6.0, start + n_cols * column + EDGE_INCHES))
    step = (width - start - EDGE_INCHES) / n_cols
    n_measures = max(len(p.rows) for _, panels in grid for p in panels) or 1
    figure = Figure(figsize=(width, 1.0), dpi=DPI)
    axes_grid = figure.subplots(len(wrapped), n_cols, squeeze=False, sharex=True)
    values = np.array([v for _, panels in grid for p in panels for r in p.rows
                       for v in (r["value"], r["ci_low"], r["ci_high"]) if v is not None], dtype=np.float64)
    axes_grid[0, 0].set_xlim(*value_limits(values))
    axes_grid[0, 0].xaxis.set_major_locator(MaxNLocator(nbins=4))
    for r, (label, panels) in enumerate(wrapped):
        for c in range(n_cols):
            axes = axes_grid[r, c]
            if c >= len(panels):
                axes.set_visible(False)
                continue
            _draw_panel(axes, panels[c], n_measures)
        axes_grid[r, 0].set_ylabel(label, fontsize=FONT_TITLE, fontweight="bold")
    for axes in axes_grid[-1]:
        axes.set_xlabel("correlation", fontsize=FONT)
    handles = [Line2D([], [], linestyle="none", **style) for style in DECISION_STYLE.values()]
    footer = wrap(footer, width, FONT) if footer else ""
    # two columns of entries only where the page is wide enough for them
    two_columns = width >= 2 * widest([h.get_label() for h in handles], FONT) + 1.0
    legend = figure.legend(handles=handles, loc="lower center", ncols=2 if two_columns else 1, fontsize=FONT,
                           frameon=False,
                           title=footer or None, title_fontsize=FONT)
    legend.get_title().set_color(NOTE_COLOUR)
    row_titles = [max(text_inches(p.title, FONT)[1] for p in panels) for _, panels in wrapped]
    place_panel_grid(figure, axes_grid, wrap(title, width), legend, left=start + y_left, step=step,
                     panel_width=step - y_left - PANEL_GAP_INCHES, panel_height=n_measures * FOREST_ROW_INCHES,
                     row_titles=row_titles, y_left=y_left)
    return figure


def _draw_panel(axes, panel: VerdictPanel, n_measures: int) -> None:
    axes.set_title(panel.title, fontsize=FONT, y=1.0, pad=TITLE_PAD_POINTS)
    axes.axvline(0.0, color="#888888", linewidth=0.8, linestyle="--", zorder=0)
    axes.set_ylim(n_measures - 0.5, -0.5)
    axes.tick_params(axis="x", labelbottom=True, labelsize=FONT)
    axes.tick_params(axis="y", length=0, labelsize=FONT)
    if not panel.rows:
        axes.set_yticks([])
        axes.text(0.5, 0.5, wrap(panel.note, PLOT_INCHES, FONT_NOTE), transform=axes.transAxes, ha="center",
                  va="center", fontsize=FONT_NOTE, color=NOTE_COLOUR)
        return
    axes.set_yticks(range(len(panel.rows)), [r["measure"] for r in panel.rows])
    low, high = axes.get_xlim()
    for y, row in enumerate(panel.rows):
        style = {k: v for k, v in DECISION_STYLE[row["style"]].items() if k != "label"}
        value = row["value"] if row["value"] is not None else np.nan
        if np.isfinite(value):
            axes.hlines(y, row["ci_low"] if row["ci_low"] is not None else np.nan,
                        row["ci_high"] if row["ci_high"] is not None else np.nan, color=style["color"],
                        linewidth=1.4)
            axes.plot([value], [y], linestyle="none", **style)
        if row["label"]:
            right = np.isfinite(value) and value < (low + high) / 2
            axes.text(0.98 if right else 0.02, y, row["label"], transform=axes.get_yaxis_transform(),
                      ha="right" if right else "left", va="center", fontsize=FONT_NOTE, color=NOTE_COLOUR,
                      bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})


def _codes_of(verdict: pl.DataFrame) -> tuple[list[str], list[str]]:
    return sorted(verdict["E"].unique().to_list()), sorted(verdict["subset"].unique().to_list())


def _verdict_figure(verdict: pl.DataFrame, segments: tuple[str, ...], name: str, manifest: Manifest,
                    description: str) -> Figure | None:
    rows = verdict.filter(pl.col("segment").is_in(list(segments)))
    if rows.is_empty():
        manifest.leave_out(name, f"{UNDEFINED}: the verdict has no family of the segment(s) "
                                 f"{', '.join(segments)}; figure not drawn")
        return None
    targets = [t for t in NAMES if t in set(rows["target"].to_list())]
    families = verdict.select("subset", "E").unique().sort("subset", "E").iter_rows()  # a row each, every figure
    columns = [(t, s) for t in targets for s in segments]
    grid = []
    for subset, ranker in families:
        label = f"{subset}, {ranker}"
        grid.append((label, [_panel(rows, t, subset, ranker, s,
                                    TARGET_SHORT[t] if len(segments) == 1 else f"{TARGET_SHORT[t]}: {s}", name,
                                    manifest) for t, s in columns]))
    corr_type = rows["corr_type"][0]
    manifest.drawn.append({"file": name, "figure": description, "segments": list(segments), "targets": targets,
                           "panels": [f"{label} / {p.title.splitlines()[0]}" for label, panels in grid
                                      for p in panels if p.rows]})
    words = {p.note.split(":")[0] for _, panels in grid for p in panels if not p.rows}
    rankers, subsets = _codes_of(rows)
    what = "all samples" if segments == (HEADLINE_SEGMENT,) else "narrow: K < Np, wide: K >= Np"
    title = (f"Verdict: which measure to monitor for each target ({what}). {CORR_LABELS.get(corr_type, corr_type)} "
             "correlation of each measure (alpha cross-fitted) with its 95 % bootstrap interval over query "
             "resamples, compared ones ordered from the highest; panel rows = subset, ranker")
    return _figure(grid, title=title, footer=figure_footer(manifest, words, rankers, subsets, cells=False))


def embedded_rst(png: bytes, alt: str) -> str:
    """reStructuredText of an image that embeds ``png`` (a data URI, wrapped to short lines: docutils
    joins a URI's lines and refuses very long ones), as wide as the page, with ``alt`` text."""
    lines = textwrap.wrap(png_data_uri(png), 76)
    return "\n".join([f".. image:: {lines[0]}", *(f"   {line}" for line in lines[1:]), "   :width: 100%",
                      f"   :alt: {alt}", ""])


def verdict_figures(verdict: pl.DataFrame, manifest: Manifest) -> dict[str, Figure | None]:
    """:data:`VERDICT_FIGURE` and :data:`VERDICT_DETAIL` of the verdict table ``verdict``
    (:data:`VERDICT_COLUMNS` at least; module docstring), recorded in ``manifest``; None for a
    figure without any family (listed as left out); no detail for a verdict on the segment ``all``
    only (samples without Np, such as traces, have no narrow and wide segments)."""
    require(verdict, VERDICT_COLUMNS, "verdict")
    figures = {VERDICT_FIGURE: _verdict_figure(verdict, (HEADLINE_SEGMENT,), VERDICT_FIGURE, manifest,
                                               "verdict: each measure's correlation with its interval, ordered, "
                                               "decision marked; all samples")}
    if set(verdict["segment"].to_list()) != {HEADLINE_SEGMENT}:  # a verdict without Np (traces) has no detail
        figures[VERDICT_DETAIL] = _verdict_figure(verdict, FIT_SEGMENTS, VERDICT_DETAIL, manifest,
                                                  "verdict on the narrow and wide segments")
    return figures
