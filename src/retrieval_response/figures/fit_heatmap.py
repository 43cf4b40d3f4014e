"""The fit heatmap: correlation of T, nDCG and F with a target on narrow (K < Np) and wide (K >= Np)
segments (the paper's Fig 5)."""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.figures.inputs import FIT_SEGMENTS, Gaps, nothing_to_draw, ordered_groups, split_undefined
from retrieval_response.figures.labels import CORR_LABELS, MEASURE_NOT_COMPUTED, TARGET_LABELS, TARGET_SHORT
from retrieval_response.figures.layout import (
    CORRELATION_SCALE,
    CellLayout,
    cell_key,
    figure_footer,
    heatmap_cells,
    panel_words,
    with_sizes,
)
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import HeatmapPanel, heatmap_figure
from retrieval_response.measures.registry import heatmap_measures


def fit_heatmap_figure(table: pl.DataFrame, gaps: Gaps, target: str, corr_types: list[str],
                       manifest: Manifest) -> Figure | None:
    """Correlation of the registry's fit-heatmap measures (``heatmap_measures("fit")``, in registry
    order) with ``target`` on narrow / wide segments.

    A panel per measure; columns = subset x {narrow, wide}, rows = correlation type x ranker;
    cells show the correlation (max over the alpha grid) and n, on :data:`CORRELATION_SCALE`.
    Empty cells say why (``n < <minimum>``, ``undefined``: grey; ``not run``: white).
    """
    name = f"heatmap_fit_{target}.png"
    drawn = heatmap_measures("fit")
    rows = table.filter(pl.col("target") == target, pl.col("segment").is_in(FIT_SEGMENTS),
                        pl.col("measure").is_in(drawn), pl.col("corr_type").is_in(corr_types))
    defined = split_undefined(rows, "measure", name, manifest)
    if defined.is_empty():
        return nothing_to_draw(manifest, name, rows)
    types = [c for c in corr_types if c in set(rows["corr_type"].to_list())]
    rankers = sorted(rows["E"].unique().to_list())
    groups = ordered_groups(rows)
    column = cell_key(["group", "segment"]).alias("column")
    rows = rows.with_columns(column)
    by_type = pl.DataFrame({"corr_type": types})
    small = gaps.small.filter(pl.col("target") == target).with_columns(column).join(by_type, how="cross")
    absent = gaps.absent.with_columns(column).join(by_type, how="cross")
    layout = CellLayout(["corr_type", "E"], [f"{c}\x1f{e}" for c in types for e in rankers], "column",
                        [f"{g}\x1f{s}" for g in groups for s in FIT_SEGMENTS])
    row_labels = [f"{CORR_LABELS[c]}  {e}" if len(types) > 1 else e for c in types for e in rankers]
    col_labels = [f"{g}\n{s}" for g in groups for s in FIT_SEGMENTS]
    panels = []
    for measure in drawn:
        part = rows.filter(pl.col("measure") == measure)
        if part.is_empty():
            manifest.leave_out(name, f"{MEASURE_NOT_COMPUTED}: measure not in the correlation table; panel not drawn",
                               measure=measure)
            continue
        cell_gaps = Gaps(small.filter(pl.col("measure") == measure), absent, gaps.never_run, gaps.sizes)
        cells = heatmap_cells(part, cell_gaps, layout, manifest.min_segment_samples)
        panels.append(HeatmapPanel(measure, cells.values, cells.text, cells.notes, row_labels,
                                   with_sizes(col_labels, cells.common), len(rankers) if len(types) > 1 else 0,
                                   cells.not_drawn))
    measures = ", ".join(drawn)
    manifest.drawn.append({"file": name, "figure": f"correlation of {measures} with {TARGET_SHORT[target]}, "
                           "narrow / wide segments", "segmentation": "fit", "target": target,
                           "corr_types": types, "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"Correlation of {measures} with {TARGET_LABELS[target]} on narrow (K < Np) and wide "
                       "(K >= Np) segments; alpha = max over the grid"),
        xlabel="subset and segment", cmap=CORRELATION_SCALE.cmap, norm=CORRELATION_SCALE.norm,
        extend=CORRELATION_SCALE.extend, colorbar_label="correlation",
        footer=figure_footer(manifest, panel_words(panels), rankers, groups))
