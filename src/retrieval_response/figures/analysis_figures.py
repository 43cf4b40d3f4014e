"""The analysis figures (the paper's grade shares and heatmaps, and a forest plot of every measure) and their manifest:
the run that draws every kind (one module per kind beside this one).

Files written into the figure folder; names come from fixed vocabularies only (kind,
segmentation, target), never from the data:

- ``grades_ratio.png``: share of each grade per K/Np segment (the paper's Figs 2-4); a panel per subset,
  rows = embedder x grade 1..5, each embedder's 5 cells in a column sum to 1.
- ``heatmap_fit_<target>.png``: correlation of T, nDCG, F with the target on narrow (K < Np)
  and wide (K >= Np) segments (the paper's Fig 5); a panel per measure, columns = subset x {narrow, wide},
  rows = correlation type x embedder.
- ``heatmap_ratio_<target>.png``: correlation per K/Np segment (the paper's Fig 6); a panel per subset,
  rows = measure x embedder, first correlation type.
- ``diff_ratio_<target>.png``: paired differences of correlations per K/Np segment (the paper's Fig 7),
  '*' where the bootstrap interval excludes 0.
- ``forest_fit.png``: each measure's correlation with its bootstrap interval, a dot per
  embedder; panel rows = subsets, columns = target x {narrow, wide}.
- ``forest_ratio_<target>.png``: the same per K/Np segment.
- ``figures.json`` and ``figures.html``: the manifest, i.e. every figure drawn (with its
  panels) and everything left out, with the reason.

Tables may carry a ``target`` column (values in :data:`TARGETS`; absent means ``grade``) and a
``null_reason`` column. Rows with a null value are left out of the drawing and listed with
their ``null_reason`` (or :data:`UNDEFINED`). Segments below the minimum sample count are not
in the tables; they are counted from the graded table and listed too. A figure with nothing to
draw is not written; a panel with nothing to draw inside a figure that has data says why.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.analysis.segments import segment_keys
from retrieval_response.figures.fit_heatmap import fit_heatmap_figure
from retrieval_response.figures.forest import fit_forest_figure, ratio_forest_figure
from retrieval_response.figures.grades import grades_figure
from retrieval_response.figures.manifest import Manifest, write_manifest
from retrieval_response.figures.plotting import save_png
from retrieval_response.figures.ratio_heatmaps import ratio_difference_figure, ratio_heatmap_figure
from retrieval_response.figures.tables import (
    CORRELATION_COLUMNS,
    DIFFERENCE_COLUMNS,
    FOREST_COLUMNS,
    finer_keys_of,
    first_corr_type,
    prepare_table,
    record_small,
    small_segments,
    targets_of,
)


def figure_set(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
               *, corr_types: list[str], min_segment_samples: int) -> tuple[dict[str, Figure], Manifest]:
    """Every figure that has something to draw, by file name, and the manifest.

    ``correlations`` / ``differences`` map a segmentation ("fit", "ratio") to its table. The
    heatmaps of fit segments show every type in ``corr_types``; the other figures the first
    type of ``corr_types`` that the table has (the paper's figures are Spearman).
    """
    manifest = Manifest(min_segment_samples)
    figures: dict[str, Figure | None] = {"grades_ratio.png": grades_figure(graded, manifest)}
    for segmentation, raw in correlations.items():
        table = prepare_table(raw, CORRELATION_COLUMNS, f"correlations_{segmentation}")
        finer = finer_keys_of(table)
        keys = segment_keys(finer)
        small = small_segments(graded, segmentation, finer, min_segment_samples).join(
            table.select(keys).unique(), on=keys, how="anti")  # a table may list them with a null value
        record_small(manifest, small, segmentation, finer)
        if table.is_empty():
            manifest.leave_out(f"{segmentation} figures", f"figures not drawn: no segment with n >= "
                               f"{min_segment_samples} graded samples")
            continue
        table = table.with_columns([pl.lit(None, pl.Float64).alias(c) for c in FOREST_COLUMNS
                                    if c not in table.columns])
        first = first_corr_type(table, corr_types)
        if segmentation == "fit":
            for target in targets_of(table):
                figures[f"heatmap_fit_{target}.png"] = fit_heatmap_figure(table, small, target, corr_types, manifest)
            figures["forest_fit.png"] = fit_forest_figure(table, small, first, manifest)
            continue
        for target in targets_of(table):
            figures[f"heatmap_ratio_{target}.png"] = ratio_heatmap_figure(table, small, target, first, manifest)
            figures[f"forest_ratio_{target}.png"] = ratio_forest_figure(table, small, target, first, manifest)
        if segmentation in differences:
            diff = prepare_table(differences[segmentation], DIFFERENCE_COLUMNS, f"differences_{segmentation}")
            for target in targets_of(diff):
                figures[f"diff_ratio_{target}.png"] = ratio_difference_figure(diff, small, target, first, manifest)
    return {name: figure for name, figure in figures.items() if figure is not None}, manifest


def render_figures(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
                   folder: str | os.PathLike, *, corr_types: list[str], min_segment_samples: int) -> Manifest:
    """Write every figure with something to draw (see the module docstring) and the manifest
    (figures.json, figures.html) into ``folder``; return the manifest."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figures, manifest = figure_set(graded, correlations, differences, corr_types=corr_types,
                                   min_segment_samples=min_segment_samples)
    for name, figure in figures.items():
        save_png(figure, folder / name)
    write_manifest(manifest, folder)
    return manifest
