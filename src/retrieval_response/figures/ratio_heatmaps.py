"""Heatmaps per K/Np segment: the correlation of each measure with a target (the paper's Fig 6) and
the paired differences of correlations (Fig 7)."""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.figures.labels import CORR_LABELS, TARGET_LABELS, TARGET_SHORT
from retrieval_response.figures.layout import (
    CellLayout,
    all_values,
    diverging_norm,
    heatmap_cells,
    value_norm,
    with_sizes,
)
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import HeatmapPanel, heatmap_figure
from retrieval_response.figures.tables import (
    is_undefined,
    nothing_to_draw,
    ordered_groups,
    ordered_measures,
    ratio_order,
    split_undefined,
)

RATIO_HEATMAP_MEASURES: tuple[str, ...] = ("F", "F_e", "F_e_partner", "T", "T_u", "nDCG")


def _ratio_panels(rows: pl.DataFrame, small: pl.DataFrame, item: str, items: list[str], name: str,
                  manifest: Manifest, mark: pl.Expr | None = None) -> list[HeatmapPanel]:
    """A panel per group: rows = item (measure or difference) x embedder, columns = its K/Np segments."""
    embedders = sorted(rows["E"].unique().to_list())
    small = small.join(pl.DataFrame({item: items}), how="cross")
    panels = []
    for group in ordered_groups(rows):
        part = rows.filter(pl.col("group") == group)
        if part.filter(~is_undefined("value")).is_empty():
            manifest.leave_out(name, "panel not drawn: every correlation undefined", subset=group)
            continue
        layout = CellLayout([item, "E"], [f"{i}\x1f{e}" for i in items for e in embedders], "segment",
                             ratio_order(part["segment"].to_list()))
        values, text, notes, common = heatmap_cells(part, small.filter(pl.col("group") == group), layout, mark)
        panels.append(HeatmapPanel(group, values, text, notes, [f"{i}  {e}" for i in items for e in embedders],
                                   with_sizes(layout.col_keys, common), len(embedders)))
    return panels


def ratio_heatmap_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_type: str,
                         manifest: Manifest) -> Figure | None:
    """Correlation of each measure with ``target`` per K/Np segment: a panel per
    subset, rows = measure x embedder, columns = K/Np segments; ``corr_type`` only."""
    name = f"heatmap_ratio_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type,
                        pl.col("measure").is_in(RATIO_HEATMAP_MEASURES))
    if split_undefined(rows, "measure", name, manifest).is_empty():
        return nothing_to_draw(manifest, name, rows)
    measures = ordered_measures(rows["measure"].unique().to_list())
    panels = _ratio_panels(rows, small, "measure", measures, name, manifest)
    manifest.drawn.append({"file": name, "figure": f"correlation with {TARGET_SHORT[target]} per K/Np segment",
                           "segmentation": "ratio", "target": target, "corr_types": [corr_type],
                           "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"{CORR_LABELS[corr_type]} correlation of each measure with {TARGET_LABELS[target]} per K/Np "
                       "segment; alpha = max over the grid; grey: left out (see figures.json)"),
        xlabel="K/Np segment (round(K/Np, 1))", cmap="viridis", norm=value_norm(all_values(panels)),
        colorbar_label=f"{CORR_LABELS[corr_type]} correlation")


def ratio_difference_figure(table: pl.DataFrame, small: pl.DataFrame, target: str, corr_type: str,
                            manifest: Manifest) -> Figure | None:
    """Paired differences of correlations with ``target`` per K/Np segment: a
    panel per subset, rows = difference x embedder, a diverging colour map centred on 0, '*'
    where the bootstrap interval [ci_low, ci_high] excludes 0."""
    name = f"diff_ratio_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type)
    if split_undefined(rows, "difference", name, manifest).is_empty():
        return nothing_to_draw(manifest, name, rows)
    differences = rows["difference"].unique(maintain_order=True).to_list()  # the analysis's order
    excludes_zero = (pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)
    mark = pl.when(excludes_zero.fill_null(False)).then(pl.lit("*")).otherwise(pl.lit(""))
    panels = _ratio_panels(rows, small, "difference", differences, name, manifest, mark)
    manifest.drawn.append({"file": name, "figure": f"differences of correlations with {TARGET_SHORT[target]} "
                           "per K/Np segment", "segmentation": "ratio", "target": target,
                           "corr_types": [corr_type], "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"Differences of {CORR_LABELS[corr_type]} correlations with {TARGET_LABELS[target]} per K/Np "
                       "segment (X-Y = corr(X) - corr(Y)); * = bootstrap interval excludes 0"),
        xlabel="K/Np segment (round(K/Np, 1))", cmap="RdBu_r", norm=diverging_norm(all_values(panels)),
        colorbar_label=f"difference of {CORR_LABELS[corr_type]} correlations")
