"""Forest plots: each measure's correlation with its bootstrap interval, a dot per ranker (for
traces: per system), on narrow / wide segments (``forest_fit.png``), per K/Np segment
(``forest_ratio_<target>.png``) or on all samples (``forest_all.png``, the one of traces)."""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.analysis.segments import too_few
from retrieval_response.analysis.targets import NAMES
from retrieval_response.figures.inputs import (
    FIT_SEGMENTS,
    FOREST_COLUMNS,
    Gaps,
    is_undefined,
    n_range,
    nothing_to_draw,
    ordered_groups,
    ordered_measures,
    ratio_order,
    reason_of,
    split_undefined,
)
from retrieval_response.figures.labels import (
    CORR_LABELS,
    MEASURE_NOT_COMPUTED,
    NOT_RUN,
    TARGET_LABELS,
    TARGET_SHORT,
    UNDEFINED,
)
from retrieval_response.figures.layout import figure_footer
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import ForestPanel, ForestRow, forest_figure, wrap
from retrieval_response.figures.run_end import FOREST_ALL


def _empty_note(gaps: Gaps, undefined: pl.DataFrame, minimum: int) -> str:
    """Why a panel is empty, in the words of :mod:`labels` (its first word is the term)."""
    if not gaps.small.is_empty():
        return f"{too_few(minimum)}\n(n = {n_range(gaps.small['n_samples'])})"
    if not undefined.is_empty():
        return "\n".join(sorted(set(undefined.select(reason_of(undefined))["reason"].to_list())))
    return NOT_RUN if not gaps.absent.is_empty() else MEASURE_NOT_COMPUTED


def _forest_panel(title: str, rows: pl.DataFrame, gaps: Gaps, minimum: int) -> ForestPanel:
    defined = rows.filter(~is_undefined("value"))
    if defined.is_empty():
        return ForestPanel(title, None, _wrap_note(_empty_note(gaps, rows, minimum)))
    points = defined.select("measure", "E", *[pl.col(c).cast(pl.Float64) for c in ("value", *FOREST_COLUMNS)])
    return ForestPanel(f"{title}\nn = {n_range(defined['n_samples'])}", points)


def _wrap_note(note: str) -> str:
    return wrap(note, 1.8, 8)


def _forest_rows(rows: pl.DataFrame, gaps: Gaps, groups: list[str], columns: list[tuple[str, str]],
                 titles: list[str], minimum: int) -> list[ForestRow]:
    """A ForestRow per group with a panel per (target, segment) column."""
    grid = []
    for group in groups:
        in_group = rows.filter(pl.col("group") == group)
        panels = []
        for (t, s), title in zip(columns, titles, strict=False):
            here = (pl.col("group") == group) & (pl.col("segment") == s)
            panel_gaps = Gaps(gaps.small.filter(here, pl.col("target") == t), gaps.absent.filter(here),
                              gaps.never_run, gaps.sizes)
            panels.append(_forest_panel(title, in_group.filter(pl.col("target") == t, pl.col("segment") == s),
                                        panel_gaps, minimum))
        grid.append(ForestRow(group, panels))
    return grid


def _forest(rows: pl.DataFrame, gaps: Gaps, columns: list[tuple[str, str]], titles: list[str],
            name: str, description: dict, title: str, manifest: Manifest) -> Figure | None:
    defined = split_undefined(rows, "measure", name, manifest)
    if defined.is_empty():
        return nothing_to_draw(manifest, name, rows)
    groups = ordered_groups(rows)
    with_data = set(defined["group"].to_list())
    for group in groups:
        if group not in with_data:
            manifest.leave_out(name, f"{UNDEFINED}: no defined correlation in this subset; panel row not drawn",
                               subset=group)
    drawn_columns = set(defined.select("target", "segment").iter_rows())
    for target, segment in columns:
        if (target, segment) not in drawn_columns:
            manifest.leave_out(name, f"{UNDEFINED}: no defined correlation; panel column not drawn", target=target,
                               segment=segment)
    kept = [(c, t) for c, t in zip(columns, titles, strict=False) if c in drawn_columns]
    shown_groups = [g for g in groups if g in with_data]
    grid = _forest_rows(rows, gaps, shown_groups, [c for c, _ in kept], [t for _, t in kept],
                        manifest.min_segment_samples)
    crossfit = bool(rows.filter((pl.col("value_crossfit") - pl.col("value")).abs() > 1e-12).height)
    manifest.drawn.append({"file": name, **description,
                           "panels": [f"{r.label} / {p.title.splitlines()[0]}" for r in grid for p in r.panels
                                      if p.points is not None]})
    rankers = sorted(rows["E"].unique().to_list())
    words = {p.note.split(":")[0].split("\n")[0] for r in grid for p in r.panels if p.points is None}
    return forest_figure(grid, measures=ordered_measures(rows["measure"].unique().to_list()),
                         rankers=rankers, title=title, xlabel="correlation", crossfit=crossfit,
                         footer=figure_footer(manifest, words, rankers, shown_groups, gaps.never_run,
                                               cells=False))


def _forest_title(corr_type: str, what: str) -> str:
    return (f"{CORR_LABELS[corr_type]} correlation of each measure with {what}: dot = value (alpha = max over the "
            "grid), line = 95 % bootstrap interval over query resamples, open diamond = alpha cross-fitted")


def fit_forest_figure(table: pl.DataFrame, gaps: Gaps, corr_type: str, manifest: Manifest) -> Figure | None:
    """Each measure's correlation with its bootstrap interval on narrow / wide segments: panel
    rows = subsets, columns = target x {narrow, wide}, a dot per ranker; ``corr_type`` only."""
    rows = table.filter(pl.col("corr_type") == corr_type, pl.col("segment").is_in(FIT_SEGMENTS))
    targets = [t for t in NAMES if t in set(rows["target"].to_list())]
    columns = [(t, s) for t in targets for s in FIT_SEGMENTS]
    titles = [f"{TARGET_SHORT[t]}: {s}" for t, s in columns]
    what = " / ".join(TARGET_LABELS[t] for t in targets)
    return _forest(rows, gaps, columns, titles, "forest_fit.png",
                   {"figure": "forest plot of every measure, narrow / wide segments", "segmentation": "fit",
                    "targets": targets, "corr_types": [corr_type]},
                   _forest_title(corr_type, what) + "; narrow: K < Np, wide: K >= Np", manifest)


def ratio_forest_figure(table: pl.DataFrame, gaps: Gaps, target: str, corr_type: str,
                        manifest: Manifest) -> Figure | None:
    """Each measure's correlation with ``target`` and its bootstrap interval per K/Np segment:
    panel rows = subsets, columns = K/Np segments (wrapped), a dot per ranker."""
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type)
    segments = ratio_order(rows["segment"].to_list())
    return _forest(rows, gaps, [(target, s) for s in segments], [f"K/Np {s}" for s in segments],
                   f"forest_ratio_{target}.png",
                   {"figure": f"forest plot of every measure per K/Np segment, {TARGET_SHORT[target]}",
                    "segmentation": "ratio", "target": target, "corr_types": [corr_type]},
                   _forest_title(corr_type, TARGET_LABELS[target]) + "; panels = K/Np segments", manifest)


def all_forest_figure(table: pl.DataFrame, gaps: Gaps, corr_type: str, manifest: Manifest) -> Figure | None:
    """Each measure's correlation with each target and its bootstrap interval on all samples
    (segmentation ``all``; traces, which have no Np, are analysed so): panel rows = subsets,
    columns = targets, a dot per ranker or system; ``corr_type`` only."""
    rows = table.filter(pl.col("corr_type") == corr_type, pl.col("segment") == "all")
    targets = [t for t in NAMES if t in set(rows["target"].to_list())]
    what = " / ".join(TARGET_LABELS[t] for t in targets)
    return _forest(rows, gaps, [(t, "all") for t in targets], [TARGET_SHORT[t] for t in targets], FOREST_ALL,
                   {"figure": "forest plot of every measure, all samples", "segmentation": "all", "targets": targets,
                    "corr_types": [corr_type]},
                   _forest_title(corr_type, what) + "; all samples, a dot per ranker or system", manifest)
