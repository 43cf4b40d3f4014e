"""Correlations on query resamples with alpha cross-fitted inside each resample (docs/METHODS.md#verdict).

The analysis's intervals (:mod:`.correlation_tables`) evaluate a measure with alpha at the alpha
chosen on the full data in every resample, so they do not carry that choice. Here each resample
is split into the analysis's two query halves (:func:`~.crossfit.query_halves`): alpha is chosen
on one half and the correlation measured on the other, and the reverse, averaged
(:func:`~.crossfit.crossfit`), on the full data and on every resample alike. The verdict and the
adjusted replication verdicts stand on these draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import resample_weights
from retrieval_response.analysis.correlations import TIE_ULPS, first_max, sorted_tie_anchors
from retrieval_response.analysis.crossfit import crossfit
from retrieval_response.analysis.samples import MeasureCells, PreparedSamples, measure_cells, prepare_samples
from retrieval_response.analysis.segment_correlations import segment_curves
from retrieval_response.measures.registry import MEASURES

RANK_CORRELATIONS = ("spearman", "kendall_b", "kendall_c")
"""Correlations that depend on the order of the measure's values alone."""
RESAMPLE_CHUNK = 200
"""Resamples evaluated at once (memory: chunk x alphas x cells)."""


@dataclass
class QueryResampling:
    """The samples of one segmentation, the bootstrap's query multiplicities (R, Q) and each
    query's half (True = half A)."""

    prepared: PreparedSamples
    weights: np.ndarray
    half_a: np.ndarray


def query_resampling(graded: pl.DataFrame, ranked: pl.DataFrame | None, segmentation: str, targets: list[str],
                     compat: str, seed: int, resamples: int) -> QueryResampling:
    """Samples of ``segmentation`` (no finer keys), ``resamples`` query resamples stratified by
    subset and the halves, all from ``seed`` and the query ids as in the analysis."""
    tie_ulps = TIE_ULPS if compat == "exact" else 0
    prepared = prepare_samples(graded, ranked, segmentation, (), targets, tie_ulps, seed)
    weights = resample_weights(prepared.query_strata, max(resamples, 0), seed)
    halves = prepared.rows.select("q", "half").unique().sort("q")
    half_a = np.zeros(len(prepared.query_strata), dtype=bool)
    half_a[halves["q"].to_numpy()] = halves["half"].to_numpy() == 0
    return QueryResampling(prepared, weights, half_a)


def _dense_ranks(values: np.ndarray, tie_ulps: int) -> np.ndarray:
    """(A, n) tie-group ranks 0, 1, ... of each row of ``values`` in ascending order, values within
    ``tie_ulps`` units in the last place tied (:func:`~retrieval_response.analysis.correlations.tie_anchors`)."""
    order, anchored = sorted_tie_anchors(np.atleast_2d(np.asarray(values, np.float64)), tie_ulps)
    steps = np.concatenate([np.zeros((len(order), 1), np.int64),
                            np.cumsum(anchored[:, 1:] != anchored[:, :-1], axis=1)], axis=1)
    ranks = np.empty_like(steps)
    np.put_along_axis(ranks, order, steps, axis=1)
    return ranks


def order_ranks(measure, features: dict[str, np.ndarray], grid: np.ndarray, compat: str) -> np.ndarray:
    """(A, n) tie-group ranks of the measure's values on ``features`` at each alpha of ``grid``:
    exact (double-double) where the analysis decides ties exactly, else float64 within TIE_ULPS."""
    exact = measure.exact_values(features, grid) if compat == "exact" else None
    if exact is not None:
        return exact[0]
    return _dense_ranks(measure.evaluate(features, grid, compat), TIE_ULPS if compat == "exact" else 0)


def varying(ranks: np.ndarray) -> np.ndarray:
    """Per alpha (row of :func:`order_ranks`' ``ranks``), whether the measure varies over the cells:
    a constant measure has every rank 0 (the one rule of constant orders, shared with the verdict)."""
    return ranks.max(axis=1, initial=0) > 0


def distinct_order_alphas(measure, features: dict[str, np.ndarray], grid: np.ndarray, compat: str) -> np.ndarray:
    """The first alpha of ``grid`` of each distinct order (with ties) of the cells ``features``, in
    grid order. A rank correlation depends on the order alone, so its curve over these alphas
    holds every distinct value of the full curve, each at the first alpha that reaches it: the
    first maximum, hence the cross-fitted value, is the same on both grids. An alpha at which the
    measure is constant on the cells has no correlation and is never chosen: it is left out unless
    every alpha is (the one rule of constant orders, shared with the verdict's "same order")."""
    ranks = order_ranks(measure, features, grid, compat)
    moving = varying(ranks)
    if moving.any():
        ranks, grid = ranks[moving], grid[moving]
    _, first = np.unique(ranks, axis=0, return_index=True)
    return grid[np.sort(first)]


def crossfit_correlation(measure, cells: MeasureCells, s: int, grid: np.ndarray, corr_type: str, compat: str,
                         weights: np.ndarray, half_a: np.ndarray) -> tuple[float, np.ndarray, float | None]:
    """Segment ``s``'s correlation of ``measure``, its value on every resample of ``weights`` (R, Q)
    and the alpha a measure with alpha reaches its maximum at on the full data (None without alpha).

    A measure with alpha is cross-fitted, on the full data and inside each resample on its two
    halves (``half_a``), over the alphas of ``grid`` that give distinct orders for a rank
    correlation. When every alpha gives the same order of the segment's cells the measure has
    nothing to choose: its correlation is taken on the whole data, as for a measure without alpha.
    """
    alpha = None
    if measure.has_alpha and corr_type in RANK_CORRELATIONS:
        lo, hi = cells.cell_start[s], cells.cell_start[s + 1]
        grid = distinct_order_alphas(measure, {c: v[lo:hi] for c, v in cells.features.items()}, grid, compat)
    elif not measure.has_alpha:
        grid = np.zeros(1)
    choose = measure.has_alpha and len(grid) > 1
    curves = segment_curves(measure, cells, s, grid, [corr_type], compat)[corr_type]
    if measure.has_alpha:
        _, index = first_max(curves[0])
        alpha = float(grid[index]) if index >= 0 else None
    value = float(crossfit(curves[1], curves[2])[0]) if choose else float(curves[0, 0])
    draws = np.full(weights.shape[0], np.nan)
    for start in range(0, weights.shape[0], RESAMPLE_CHUNK):
        chunk = weights[start:start + RESAMPLE_CHUNK]
        if choose:
            halves = np.vstack([chunk * half_a, chunk * ~half_a])
            curves = segment_curves(measure, cells, s, grid, [corr_type], compat, halves)[corr_type]
            draws[start:start + len(chunk)] = crossfit(curves[:len(chunk)], curves[len(chunk):])[0]
        else:
            curves = segment_curves(measure, cells, s, grid[:1], [corr_type], compat, chunk)[corr_type]
            draws[start:start + len(chunk)] = curves[:, 0]
    return value, draws, alpha


def resampled_correlations(resampling: QueryResampling, names: list[str], target: str, grid: np.ndarray,
                           corr_type: str, compat: str, sizes: Mapping[str, pl.DataFrame]) -> dict[int, dict[str, tuple]]:
    """segment id -> measure -> (n_samples, value, draws (R,), alpha) for the measures of ``names`` in the
    segments their ``sizes`` frame keeps (:func:`~.samples.measure_sizes` or
    :func:`~.samples.table_sizes`): the (cross-fitted) correlation with ``target``, its value on
    every resample and the alpha of its maximum on the full data (:func:`crossfit_correlation`)."""
    results: dict[int, dict[str, tuple]] = {}
    for name in names:
        measure = MEASURES[name]
        cells = measure_cells(resampling.prepared, measure, target, sizes[name])
        for s, seg in enumerate(cells.seg):
            value, draws, alpha = crossfit_correlation(measure, cells, s, grid, corr_type, compat,
                                                       resampling.weights, resampling.half_a)
            results.setdefault(int(seg), {})[name] = (int(cells.n_samples[s]), value, draws, alpha)
    return results
