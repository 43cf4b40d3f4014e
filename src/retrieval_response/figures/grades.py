"""The grade figure: share of each LLM grade per K/Np segment (the paper's Figs 2-4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from retrieval_response.analysis.segments import kept_and_reason, segment_labels, too_few, with_subset_and_level
from retrieval_response.figures.inputs import Gaps, finer_keys_of, n_range, ratio_order, require, small_reason
from retrieval_response.figures.labels import NOT_RUN
from retrieval_response.figures.layout import SHARE_SCALE, figure_footer, panel_words
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import HeatmapPanel, heatmap_figure

GRADES: tuple[int, ...] = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class GradeDistribution:
    """Share of each grade per ranker and K/Np segment.

    ``fractions[e, g, s]`` = share of grade GRADES[g] among the graded samples of ranker
    ``rankers[e]`` in segment ``segments[s]`` (NaN where the segment has fewer than the
    minimum samples); ``sizes[e, s]`` = number of graded samples there (0 where dropped).
    """

    rankers: list[str]
    segments: list[str]
    fractions: np.ndarray
    sizes: np.ndarray


def grade_segments(segments: pl.DataFrame, minimum: int) -> pl.DataFrame:
    """``E, subset, segment, n_samples, kept, reason`` of a ratio segments table
    (``analysis.samples.segment_table``): n_samples = the samples with a grade, as the analysis
    counts them (the largest n_samples of a measure with the target ``grade``; P and R have every sample),
    summed over the finer keys; kept and reason by the analysis's rule
    (:func:`~retrieval_response.analysis.segments.kept_and_reason`)."""
    keys = ["E", "subset", *finer_keys_of(segments), "segment"]
    return (
        segments.filter(pl.col("target") == "grade").group_by(keys).agg(pl.col("n_samples").max())
        .group_by("E", "subset", "segment").agg(pl.col("n_samples").sum())
        .with_columns(kept_and_reason(pl.col("n_samples"), minimum)).sort("E", "subset", "segment")
    )


def grade_distribution_matrix(graded: pl.DataFrame, sizes: pl.DataFrame) -> GradeDistribution:
    """Grade shares per (ranker, K/Np segment) over rows with a grade, in the segments ``sizes``
    keeps (``E, segment, n_samples, kept``: :func:`grade_segments` of one subset); each kept (ranker,
    segment) column of 5 shares sums to 1, and its size is the n_samples of ``sizes``."""
    require(graded, ("E", "Np", "K", "grade"), "graded")
    rows = graded.filter(pl.col("grade").is_not_null()).select("E", "Np", "K", "grade")
    outside = rows.filter(~pl.col("grade").is_in(GRADES))
    if outside.height:
        raise ValueError(f"graded: grade {outside['grade'][0]} outside the scale {GRADES[0]}..{GRADES[-1]}")
    rows = rows.with_columns(segment_labels(rows, "ratio"))
    counts = rows.group_by("E", "segment", "grade").len()
    kept = sizes.filter(pl.col("kept")).select("E", "segment", size=pl.col("n_samples"))
    rankers = sorted(kept["E"].unique().to_list())
    segments = ratio_order(kept["segment"].to_list())
    fractions = np.full((len(rankers), len(GRADES), len(segments)), np.nan)
    size_matrix = np.zeros((len(rankers), len(segments)), dtype=np.int64)
    if not rankers:
        return GradeDistribution(rankers, segments, fractions, size_matrix)
    kept_counts = counts.join(kept, on=["E", "segment"])
    e = kept_counts["E"].replace_strict(rankers, list(range(len(rankers))), return_dtype=pl.Int64).to_numpy()
    s = kept_counts["segment"].replace_strict(segments, list(range(len(segments))), return_dtype=pl.Int64).to_numpy()
    g = kept_counts["grade"].to_numpy().astype(np.int64) - GRADES[0]
    size_matrix[e, s] = kept_counts["size"].to_numpy()
    fractions[e, :, s] = 0.0
    fractions[e, g, s] = kept_counts["len"].to_numpy() / kept_counts["size"].to_numpy()
    return GradeDistribution(rankers, segments, fractions, size_matrix)


def _empty_words(subset: str, dist: GradeDistribution, gaps: Gaps, minimum: int) -> np.ndarray:
    """(rankers x grades, segments) the word of each empty cell: "not run" where the ranker has
    no sample of the segment in ``subset``, else "n < <minimum>" (too few graded samples); "" elsewhere."""
    absent = set(gaps.absent.filter(pl.col("subset") == subset).select("E", "segment").iter_rows())
    words = np.full((len(dist.rankers), len(GRADES), len(dist.segments)), "", dtype=object)
    for e, ranker in enumerate(dist.rankers):
        for c, segment in enumerate(dist.segments):
            if dist.sizes[e, c] == 0:
                words[e, :, c] = NOT_RUN if (ranker, segment) in absent else too_few(minimum)
    return words.reshape(len(dist.rankers) * len(GRADES), len(dist.segments))


def _grade_panel(subset: str, dist: GradeDistribution, gaps: Gaps, minimum: int) -> HeatmapPanel:
    """A subset's panel; a ranker's column without enough graded samples says why (:func:`_empty_words`)."""
    values = dist.fractions.reshape(len(dist.rankers) * len(GRADES), len(dist.segments))
    words = _empty_words(subset, dist, gaps, minimum)
    col_labels = []
    for s, segment in enumerate(dist.segments):
        sizes = dist.sizes[:, s][dist.sizes[:, s] > 0]
        col_labels.append(f"{segment}\nn={n_range(pl.Series(sizes))}")
    return HeatmapPanel(
        title=subset, values=values,
        text=np.where(np.isnan(values), words.astype(str), np.char.mod("%.2f", np.nan_to_num(values))),
        notes=np.full(values.shape, ""),
        row_labels=[f"{e}  grade {g}" for e in dist.rankers for g in GRADES],
        col_labels=col_labels, group_rows=len(GRADES), not_drawn=words == NOT_RUN,
    )


def grades_figure(graded: pl.DataFrame, segments: pl.DataFrame, gaps: Gaps, manifest: Manifest,
                  name: str = "grades_ratio.png") -> Figure | None:
    """Grade distribution per K/Np segment, a panel per subset, in the segments the ratio
    segments table ``segments`` keeps for the grade (:func:`grade_segments`; ``gaps``: its
    :class:`Gaps`); None if no subset has one (recorded in ``manifest``)."""
    samples = with_subset_and_level(graded)
    minimum = manifest.min_segment_samples
    sizes = grade_segments(segments, minimum)
    panels = []
    for subset in sorted(samples["subset"].unique().to_list()):
        dist = grade_distribution_matrix(samples.filter(pl.col("subset") == subset),
                                         sizes.filter(pl.col("subset") == subset))
        if dist.rankers:
            panels.append(_grade_panel(subset, dist, gaps, minimum))
        else:
            manifest.leave_out(name, small_reason(minimum, "no K/Np segment with at least {minimum} graded samples; "
                                                   "panel not drawn"), subset=subset)
    if not panels:
        return None
    manifest.drawn.append({"file": name, "figure": "share of each grade per K/Np segment",
                           "segmentation": "ratio", "panels": [p.title for p in panels]})
    return heatmap_figure(
        panels, title=(f"Distribution of the LLM grade per K/Np segment (segments with >= {minimum} graded samples); "
                       "each ranker's 5 cells in a column sum to 1"),
        xlabel="K/Np segment (round(K/Np, 1)) and its number of graded samples",
        cmap=SHARE_SCALE.cmap, norm=SHARE_SCALE.norm, colorbar_label="share of samples",
        footer=figure_footer(manifest, panel_words(panels), samples["E"].unique().to_list(),
                             [p.title for p in panels], gaps.never_run))
