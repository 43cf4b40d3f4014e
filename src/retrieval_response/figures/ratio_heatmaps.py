"""Heatmaps per K/Np segment: the correlation of each measure with a target (the paper's Fig 6) and
the paired differences of correlations (Fig 7)."""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.figures.inputs import (
    Gaps,
    difference_gaps,
    is_undefined,
    nothing_to_draw,
    ordered_groups,
    ordered_measures,
    ratio_order,
    split_undefined,
    target_gaps,
)
from retrieval_response.figures.labels import CORR_LABELS, TARGET_LABELS, TARGET_SHORT, UNDEFINED
from retrieval_response.figures.layout import (
    CORRELATION_SCALE,
    DIFFERENCE_SCALE,
    CellLayout,
    ColourScale,
    figure_footer,
    heatmap_cells,
    panel_words,
    with_sizes,
)
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import HeatmapPanel, heatmap_figure
from retrieval_response.measures.registry import heatmap_measures


def _ratio_panels(rows: pl.DataFrame, gaps: Gaps, item: str, items: list[str], name: str,
                  manifest: Manifest, mark: pl.Expr | None = None) -> list[HeatmapPanel]:
    """A panel per group: rows = item (measure or difference) x ranker, columns = its K/Np
    segments; a ranker never run on the group has no rows there. ``gaps.small`` has a column
    ``item`` (:func:`~.tables.target_gaps`, :func:`~.tables.difference_gaps`)."""
    by_item = pl.DataFrame({item: items})
    cell_gaps = Gaps(gaps.small.filter(pl.col(item).is_in(items)), gaps.absent.join(by_item, how="cross"),
                     gaps.never_run, gaps.sizes)
    panels = []
    for group in ordered_groups(rows):
        part = rows.filter(pl.col("group") == group)
        if part.filter(~is_undefined("value")).is_empty():
            manifest.leave_out(name, f"{UNDEFINED}: every correlation of this subset; panel not drawn", subset=group)
            continue
        never = set(gaps.never_run.filter(pl.col("group") == group)["E"].to_list())
        rankers = sorted(set(rows["E"].unique().to_list()) - never)
        layout = CellLayout([item, "E"], [f"{i}\x1f{e}" for i in items for e in rankers], "segment",
                            ratio_order(part["segment"].to_list()))
        in_group = Gaps(*(f.filter(pl.col("group") == group) for f in (cell_gaps.small, cell_gaps.absent)),
                        gaps.never_run, gaps.sizes)
        cells = heatmap_cells(part, in_group, layout, manifest.min_segment_samples, mark)
        panels.append(HeatmapPanel(group, cells.values, cells.text, cells.notes,
                                   [f"{i}  {e}" for i in items for e in rankers],
                                   with_sizes(layout.col_keys, cells.common), len(rankers), cells.not_drawn))
    return panels


def _figure(panels: list[HeatmapPanel], rows: pl.DataFrame, gaps: Gaps, manifest: Manifest, *, title: str,
            scale: ColourScale, colorbar_label: str) -> Figure:
    groups = [p.title for p in panels]
    return heatmap_figure(
        panels, title=title, xlabel="K/Np segment (round(K/Np, 1))", cmap=scale.cmap, norm=scale.norm,
        extend=scale.extend, colorbar_label=colorbar_label,
        footer=figure_footer(manifest, panel_words(panels), rows["E"].unique().to_list(), groups, gaps.never_run))


def ratio_heatmap_figure(table: pl.DataFrame, gaps: Gaps, target: str, corr_type: str,
                         manifest: Manifest) -> Figure | None:
    """Correlation of each measure with ``target`` per K/Np segment: a panel per
    subset, rows = measure x ranker, columns = K/Np segments; ``corr_type`` only, on
    :data:`CORRELATION_SCALE`."""
    name = f"heatmap_ratio_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type,
                        pl.col("measure").is_in(heatmap_measures("ratio")))
    if split_undefined(rows, "measure", name, manifest).is_empty():
        return nothing_to_draw(manifest, name, rows)
    measures = ordered_measures(rows["measure"].unique().to_list())
    panels = _ratio_panels(rows, target_gaps(gaps, target), "measure", measures, name, manifest)
    manifest.drawn.append({"file": name, "figure": f"correlation with {TARGET_SHORT[target]} per K/Np segment",
                           "segmentation": "ratio", "target": target, "corr_types": [corr_type],
                           "panels": [p.title for p in panels]})
    return _figure(panels, rows, gaps, manifest, scale=CORRELATION_SCALE,
                   title=(f"{CORR_LABELS[corr_type]} correlation of each measure with {TARGET_LABELS[target]} per "
                          "K/Np segment; alpha = max over the grid"),
                   colorbar_label=f"{CORR_LABELS[corr_type]} correlation")


def ratio_difference_figure(table: pl.DataFrame, gaps: Gaps, target: str, corr_type: str,
                            manifest: Manifest) -> Figure | None:
    """Paired differences of correlations with ``target`` per K/Np segment: a panel per subset,
    rows = difference x ranker, on :data:`DIFFERENCE_SCALE` (diverging, centred on 0), '*'
    where the bootstrap interval [ci_low, ci_high] excludes 0."""
    name = f"diff_ratio_{target}.png"
    rows = table.filter(pl.col("target") == target, pl.col("corr_type") == corr_type)
    if split_undefined(rows, "difference", name, manifest).is_empty():
        return nothing_to_draw(manifest, name, rows)
    differences = rows["difference"].unique(maintain_order=True).to_list()  # the analysis's order
    excludes_zero = (pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)
    mark = pl.when(excludes_zero.fill_null(False)).then(pl.lit("*")).otherwise(pl.lit(""))
    panels = _ratio_panels(rows, difference_gaps(gaps, target, differences), "difference", differences, name,
                           manifest, mark)
    manifest.drawn.append({"file": name, "figure": f"differences of correlations with {TARGET_SHORT[target]} "
                           "per K/Np segment", "segmentation": "ratio", "target": target,
                           "corr_types": [corr_type], "panels": [p.title for p in panels]})
    limit = DIFFERENCE_SCALE.norm.vmax
    return _figure(panels, rows, gaps, manifest, scale=DIFFERENCE_SCALE,
                   title=(f"Differences of {CORR_LABELS[corr_type]} correlations with {TARGET_LABELS[target]} per "
                          "K/Np segment (X-Y = corr(X) - corr(Y)); * = bootstrap interval excludes 0"),
                   colorbar_label=f"difference of {CORR_LABELS[corr_type]} correlations (beyond +-{limit:g}: "
                                  "end colours)")
