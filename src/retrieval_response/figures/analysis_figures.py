"""The analysis figures (the paper's grade shares and heatmaps, and a forest plot of every measure) and their manifest:
the run that draws every kind (one module per kind beside this one).

Files written into the figure folder; names come from fixed vocabularies only (kind,
segmentation, target), never from the data:

- ``verdict.png`` (with a verdict table): each measure's correlation with its interval, ordered,
  the verdict's decision marked, a panel per target x subset x ranker on all samples;
  ``verdict_fit.png`` the same on narrow and wide segments (:mod:`verdict_figure`).
- ``grades_ratio.png``: share of each grade per K/Np segment (the paper's Figs 2-4); a panel per subset,
  rows = ranker x grade 1..5, each ranker's 5 cells in a column sum to 1.
- ``heatmap_fit_<target>.png``: correlation of F, T, nDCG with the target on narrow (K < Np)
  and wide (K >= Np) segments (the paper's Fig 5); a panel per measure, columns = subset x {narrow, wide},
  rows = correlation type x ranker.
- ``heatmap_ratio_<target>.png``: correlation per K/Np segment (the paper's Fig 6); a panel per subset,
  rows = measure x ranker (the measures with alpha and nDCG that the table has), first correlation type.
- ``diff_ratio_<target>.png``: paired differences of correlations per K/Np segment (the paper's Fig 7),
  '*' where the bootstrap interval excludes 0.
- ``forest_fit.png``: each measure of the table (rows in the registry's order) with its correlation and
  bootstrap interval, a dot per ranker; panel rows = subsets, columns = target x {narrow, wide}.
- ``forest_ratio_<target>.png``: the same per K/Np segment.
- ``forest_all.png``: the same on all samples (segmentation ``all``, the one of traces), panel
  columns = targets, a dot per ranker or system.
- ``feedback_rate.png`` (with a verdict and a ``feedback`` target): the feedback against each
  measure's value, binned, with intervals (:mod:`feedback_rate`).
- ``monitor_<system>.png`` (with a monitor table, traces with a ``time``): the recommended measure
  and its target per period, with intervals and control bands (:mod:`monitor_figure`); the one
  name from the data, a system's safe name.
- ``verdict_embedded.rst``: ``verdict.png`` embedded in reStructuredText, for the report's front page.
- ``figures.json`` and ``figures.html``: the manifest, i.e. every figure drawn (with its
  panels), everything left out with the reason, the combinations not run, the words of empty
  panels and what the codes stand for; figures.html opens on the verdict figure and the verdict
  in words.

Tables may carry a ``target`` column (values in ``TARGETS``; absent means ``grade``) and a
``null_reason`` column. Empty panels and cells say why in one vocabulary (``labels.empty_terms``):
``n < <minimum>`` (a segment, target and measure below the minimum sample count: not in the
correlation tables, read from the analysis's segments table, which says so) and ``undefined``
(a null value, with its ``null_reason``) are left out and listed;
``not run`` (a ranker, subset and segment without any sample) is not left out: a heatmap shows
a white cell or no row, a forest plot no dot, and the manifest lists it under ``not_run``. Signed
values use one diverging colour scale per kind, centred on 0 with fixed limits. A figure with
nothing to draw is not written. Each figure's footer explains its empty-cell words and its
ranker and subset codes.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.analysis.segments import with_subset_and_level
from retrieval_response.decide.summary import recommendation_lines
from retrieval_response.figures.feedback_rate import feedback_rate_figure
from retrieval_response.figures.fit_heatmap import fit_heatmap_figure
from retrieval_response.figures.forest import all_forest_figure, fit_forest_figure, ratio_forest_figure
from retrieval_response.figures.grades import grades_figure
from retrieval_response.figures.inputs import (
    CORRELATION_COLUMNS,
    DIFFERENCE_COLUMNS,
    FOREST_COLUMNS,
    finer_keys_of,
    first_corr_type,
    gaps_of,
    prepare_table,
    record_absent,
    record_small,
    small_reason,
    targets_of,
)
from retrieval_response.figures.labels import SUBSET_NAMES, ranker_names
from retrieval_response.figures.manifest import Manifest, write_manifest
from retrieval_response.figures.monitor_figure import monitor_figures
from retrieval_response.figures.ratio_heatmaps import ratio_difference_figure, ratio_heatmap_figure
from retrieval_response.figures.render_pool import save_pngs
from retrieval_response.figures.run_end import FEEDBACK_RATE, FOREST_ALL, FOREST_PLOT, VERDICT_EMBEDDED, VERDICT_FIGURE
from retrieval_response.figures.verdict_figure import embedded_rst, verdict_figures
from retrieval_response.infra.atomic import write_text


def _codes(graded: pl.DataFrame, registry: dict | None) -> dict[str, dict[str, str]]:
    """What the ranker and subset codes of ``graded`` stand for: a subset whose ids do not all
    start ``<subset>-`` is a dataset's name (traces keep their query ids)."""
    names = ranker_names(registry)
    samples = with_subset_and_level(graded)
    rankers = sorted(samples["E"].unique().to_list())
    prefixed = samples.group_by("subset").agg(pl.col("id").str.starts_with(pl.col("subset") + "-").all().alias("p"))
    prefixed = dict(prefixed.iter_rows())
    return {"rankers": {e: names.get(e, "a code of the samples") for e in rankers},
            "subsets": {s: SUBSET_NAMES.get(s, f"ids starting {s}-" if prefixed[s] else f"the dataset {s}")
                        for s in sorted(prefixed)}}


def figure_set(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
               segments: dict[str, pl.DataFrame], *, corr_types: list[str], min_segment_samples: int,
               rankers: dict | None = None, verdict: pl.DataFrame | None = None,
               monitor: pl.DataFrame | None = None) -> tuple[dict[str, Figure], Manifest]:
    """Every figure that has something to draw, by file name (the verdict figures first), and the manifest.

    ``correlations`` / ``differences`` / ``segments`` map a segmentation ("fit", "ratio") to its
    table; ``segments`` (``analysis.samples.segment_table``) decides which segments are
    left out and why, and ``segments["ratio"]`` which the grade figure draws. The
    heatmaps of fit segments show every type in ``corr_types``; the other figures the first
    type of ``corr_types`` that the table has (the paper's figures are Spearman). ``rankers``:
    the config's ``rankers`` registry, to say what its codes stand for. ``verdict``: the verdict
    table (decide/verdict.py), drawn and put in words in the manifest; None: no verdict figure.
    ``monitor``: the monitor table (decide/monitor.py), a figure per system; None: none.
    """
    manifest = Manifest(min_segment_samples, codes=_codes(graded, rankers))
    figures: dict[str, Figure | None] = {}
    if verdict is not None:
        figures |= verdict_figures(verdict, manifest)
        manifest.verdict_figure = VERDICT_FIGURE if figures[VERDICT_FIGURE] is not None else None
        manifest.verdict_text = "\n".join(recommendation_lines(verdict))
        manifest.verdict_segments = sorted(set(verdict["segment"].to_list()), key=("narrow", "wide", "all").index)
        figures[FEEDBACK_RATE] = feedback_rate_figure(graded, verdict, manifest) if "feedback" in graded.columns \
            else None
    if monitor is not None:
        figures |= monitor_figures(monitor, manifest)
    gaps_by = {segmentation: gaps_of(table) for segmentation, table in segments.items()}
    if "ratio" in segments:
        figures["grades_ratio.png"] = grades_figure(graded, segments["ratio"], gaps_by["ratio"], manifest)
    for segmentation, raw in correlations.items():
        table = prepare_table(raw, CORRELATION_COLUMNS, f"correlations_{segmentation}")
        gaps = gaps_by[segmentation]
        record_small(manifest, gaps.small, segmentation, finer_keys_of(segments[segmentation]))
        record_absent(manifest, gaps, segmentation)
        if table.is_empty():
            manifest.leave_out(f"{segmentation} figures", small_reason(
                min_segment_samples, "no segment with at least {minimum} graded samples; figures not drawn"))
            continue
        table = table.with_columns([pl.lit(None, pl.Float64).alias(c) for c in FOREST_COLUMNS
                                    if c not in table.columns])
        first = first_corr_type(table, corr_types)
        if segmentation == "all":
            figures[FOREST_ALL] = all_forest_figure(table, gaps, first, manifest)
            continue
        if segmentation == "fit":
            for target in targets_of(table):
                figures[f"heatmap_fit_{target}.png"] = fit_heatmap_figure(table, gaps, target, corr_types, manifest)
            figures[FOREST_PLOT] = fit_forest_figure(table, gaps, first, manifest)
            continue
        for target in targets_of(table):
            figures[f"heatmap_ratio_{target}.png"] = ratio_heatmap_figure(table, gaps, target, first, manifest)
            figures[f"forest_ratio_{target}.png"] = ratio_forest_figure(table, gaps, target, first, manifest)
        if segmentation in differences:
            diff = prepare_table(differences[segmentation], DIFFERENCE_COLUMNS, f"differences_{segmentation}")
            for target in targets_of(diff):
                figures[f"diff_ratio_{target}.png"] = ratio_difference_figure(diff, gaps, target, first, manifest)
    return {name: figure for name, figure in figures.items() if figure is not None}, manifest


def render_figures(graded: pl.DataFrame, correlations: dict[str, pl.DataFrame], differences: dict[str, pl.DataFrame],
                   segments: dict[str, pl.DataFrame], folder: str | os.PathLike, *, corr_types: list[str],
                   min_segment_samples: int, rankers: dict | None = None, verdict: pl.DataFrame | None = None,
                   monitor: pl.DataFrame | None = None, processes: int = 1) -> Manifest:
    """Write every figure with something to draw (see the module docstring) and the manifest
    (figures.json, figures.html) into ``folder``; return the manifest. ``rankers``: the
    config's ``rankers`` registry (what the codes stand for); ``verdict``: the verdict table;
    ``monitor``: the monitor table;
    ``processes``: how many processes draw the PNGs (:func:`~.render_pool.save_pngs`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figures, manifest = figure_set(graded, correlations, differences, segments, corr_types=corr_types,
                                   min_segment_samples=min_segment_samples, rankers=rankers, verdict=verdict,
                                   monitor=monitor)
    save_pngs(figures, folder, processes)
    if VERDICT_FIGURE in figures:
        write_text(embedded_rst((folder / VERDICT_FIGURE).read_bytes(), "the verdict figure"), folder / VERDICT_EMBEDDED)
    write_manifest(manifest, folder)
    return manifest
