"""Forest plots: each measure's correlation with its bootstrap interval, a dot per embedder, on
narrow / wide segments (``forest_fit.png``) or per K/Np segment (``forest_ratio_<target>.png``)."""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.analysis.correlation_tables import TARGETS
from retrieval_response.figures.labels import CORR_LABELS, TARGET_LABELS, TARGET_SHORT
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import ForestPanel, ForestRow, forest_figure, wrap
from retrieval_response.figures.tables import (
    FIT_SEGMENTS,
    FOREST_COLUMNS,
    is_undefined,
    n_range,
    nothing_to_draw,
    ordered_groups,
    ordered_measures,
    ratio_order,
    reason_of,
    split_undefined,
)


def _empty_note(small: pl.DataFrame, undefined: pl.DataFrame, minimum: int) -> str:
    if not small.is_empty():
        return f"left out:\nn < {minimum}\n(n = {n_range(small['n'])})"
    if not undefined.is_empty():
        return "left out:\n" + "\n".join(sorted(set(undefined.select(reason_of(undefined))["reason"].to_list())))
    return "no data"


def _forest_panel(title: str, rows: pl.DataFrame, small: pl.DataFrame, minimum: int) -> ForestPanel:
    defined = rows.filter(~is_undefined("value"))
    if defined.is_empty():
        return ForestPanel(title, None, _wrap_note(_empty_note(small, rows, minimum)))
    points = defined.select("measure", "E", *[pl.col(c).cast(pl.Float64) for c in ("value", *FOREST_COLUMNS)])
    return ForestPanel(f"{title}\nn = {n_range(defined['n'])}", points)


def _wrap_note(note: str) -> str:
    return wrap(note, 1.8, 8)


def _forest_rows(rows: pl.DataFrame, small: pl.DataFrame, groups: list[str], columns: list[tuple[str, str]],
                 titles: list[str], minimum: int) -> list[ForestRow]:
    """A ForestRow per group with a panel per (target, segment) column."""
    grid = []
    for group in groups:
        in_group = rows.filter(pl.col("group") == group)
        small_group = small.filter(pl.col("group") == group)
        panels = [
            _forest_panel(title, in_group.filter(pl.col("target") == t, pl.col("segment") == s),
                          small_group.filter(pl.col("segment") == s), minimum)
            for (t, s), title in zip(columns, titles, strict=False)
        ]
        grid.append(ForestRow(group, panels))
    return grid


def _forest(rows: pl.DataFrame, small: pl.DataFrame, columns: list[tuple[str, str]], titles: list[str],
            name: str, description: dict, title: str, manifest: Manifest) -> Figure | None:
    defined = split_undefined(rows, "measure", name, manifest)
    if defined.is_empty():
        return nothing_to_draw(manifest, name, rows)
    groups = ordered_groups(rows)
    with_data = set(defined["group"].to_list())
    for group in groups:
        if group not in with_data:
            manifest.leave_out(name, "panel row not drawn: no defined correlation in this subset", subset=group)
    drawn_columns = set(defined.select("target", "segment").iter_rows())
    for target, segment in columns:
        if (target, segment) not in drawn_columns:
            manifest.leave_out(name, "panel column not drawn: no defined correlation", target=target, segment=segment)
    kept = [(c, t) for c, t in zip(columns, titles, strict=False) if c in drawn_columns]
    grid = _forest_rows(rows, small, [g for g in groups if g in with_data], [c for c, _ in kept], [t for _, t in kept],
                        manifest.min_segment_samples)
    crossfit = bool(rows.filter((pl.col("value_crossfit") - pl.col("value")).abs() > 1e-12).height)
    manifest.drawn.append({"file": name, **description,
                           "panels": [f"{r.label} / {p.title.splitlines()[0]}" for r in grid for p in r.panels
                                      if p.points is not None]})
    return forest_figure(grid, measures=ordered_measures(rows["measure"].unique().to_list()),
                         embedders=sorted(rows["E"].unique().to_list()), title=title,
                         xlabel="correlation", crossfit=crossfit)


def _forest_title(corr_type: str, what: str) -> str:
    return (f"{CORR_LABELS[corr_type]} correlation of each measure with {what}: dot = value (alpha = max over the "
            "grid), line = 95 % bootstrap interval over query resamples, open diamond = alpha cross-fitted")


def fit_forest_figure(table: pl.DataFrame, small: pl.DataFrame, corr_type: str, manifest: Manifest) -> Figure | None:
    """Each measure's correlation with its bootstrap interval on narrow / wide segments: panel
    rows = subsets, columns = target x {narrow, wide}, a dot per embedder; ``corr_type`` only."""
    rows = table.filter(pl.col("corr_type") == corr_type, pl.col("segment").is_in(FIT_SEGMENTS))
    targets = [t for t in TARGETS if t in set(rows["target"].to_list())]
    columns = [(t, s) for t in targets for s in FIT_SEGMENTS]
    titles = [f"{TARGET_SHORT[t]}: {s}" for t, s in columns]
    what = " / ".join(TARGET_LABELS[t] for t in targets)
    return _forest(rows, small, columns, titles, "forest_fit.png",
                   {"figure": "forest plot of every measure, narrow / wide segments", "segmentation": "fit",
                    "targets": targets, "corr_types": [corr_type]},
                   _forest_title(corr_type, what) + "; narrow: K < Np, wide: K >= Np", manifest)


def ratio_forest_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_type: str,
                        manifest: Manifest) -> Figure | None:
    """Each measure's correlation with ``target`` and its bootstrap interval per K/Np segment:
    panel rows = subsets, columns = K/Np segments (wrapped), a dot per embedder."""
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type)
    segments = ratio_order(rows["segment"].to_list())
    return _forest(rows, small, [(target, s) for s in segments], [f"K/Np {s}" for s in segments],
                   f"forest_ratio_{target}.png",
                   {"figure": f"forest plot of every measure per K/Np segment, {TARGET_SHORT[target]}",
                    "segmentation": "ratio", "target": target, "corr_types": [corr_type]},
                   _forest_title(corr_type, TARGET_LABELS[target]) + "; panels = K/Np segments", manifest)
