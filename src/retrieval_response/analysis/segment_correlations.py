"""The correlations of one measure with one target in each kept segment: over the alpha grid on
the full data and its two query halves (the value, its alpha and the cross-fitted value), and on
bootstrap resamples (docs/METHODS.md#correlations). :mod:`.correlation_tables` makes the tables
of them; :mod:`.crossfit_bootstrap` resamples the cross-fitting.

Exact mode reads the measures with alpha in double-double arithmetic (:mod:`retrieval_response.measures._double_double`);
paper mode recomputes, where the values are rounding noise, the Pearson of the paper's code
(:func:`_paper_pearson`).
"""

from __future__ import annotations

import warnings

import numpy as np

from retrieval_response.analysis._kernels import _rounding_noise
from retrieval_response.analysis.correlations import (
    TIE_ULPS,
    first_max,
    resampled_table_correlations,
    sample_correlation,
    table_correlations,
)
from retrieval_response.analysis.crossfit import crossfit
from retrieval_response.analysis.sample_correlations import KENDALL_TYPES, sample_correlations
from retrieval_response.analysis.samples import MeasureCells

NULL_REASONS = ("too_few_samples", "constant_target", "constant_measure")
"""Why a correlation is null, in the order they are checked (:func:`null_reasons`)."""
PAPER_PEARSON_NOISE = 1e-6
"""Paper mode: Pearson of values spread by at most this (relative) is computed as the paper's code does."""


def segment_curves(measure, cells: MeasureCells, s: int, grid, corr_types, compat, query_weights=None,
                   kendall_alphas=None):
    """Correlations (T, A) per corr type of segment ``s`` at the alphas ``grid``.

    Tables: full data, half A, half B when ``query_weights`` is None, else one per row of
    ``query_weights`` (R, Q): each sample weighted by its query's multiplicity. Exact mode, for
    the measures with alpha: ranks and ties from double-double values, Pearson from their
    differences (:mod:`retrieval_response.measures._double_double`); for the others float64 values with ties within
    :data:`TIE_ULPS`. Paper mode: float64 values in the paper's order, exact float ties, and
    Pearson of the paper's computation where the values are rounding noise (:func:`_paper_pearson`).
    ``kendall_alphas`` (A,) bool: on the per-sample path, the alphas at which the Kendall types
    are computed (NaN elsewhere; :func:`.sample_correlations.sample_correlations`); default all.
    """
    lo, hi = cells.cell_start[s], cells.cell_start[s + 1]
    r0, r1 = cells.row_start[s], cells.row_start[s + 1]
    features = {c: v[lo:hi] for c, v in cells.features.items()}
    exact = measure.exact_values(features, grid) if compat == "exact" else None
    if exact is not None:
        (values, pearson_values), tie_ulps = exact, 0
    else:
        values, pearson_values = measure.evaluate(features, grid, compat), None
        tie_ulps = TIE_ULPS if compat == "exact" else 0
    local_cell = cells.row_cell[r0:r1] - lo
    if cells.counts is not None and query_weights is None:
        halves = cells.counts[lo:hi]
        tables = np.stack([halves.sum(axis=1), halves[:, 0], halves[:, 1]])
        curves = table_correlations(values, tables, cells.target_values, corr_types, tie_ulps, pearson_values)
    elif cells.counts is not None:
        index = np.searchsorted(cells.target_values, cells.row_target[r0:r1])
        curves = resampled_table_correlations(values, cells.row_q[r0:r1], local_cell, index, query_weights,
                                              cells.target_values, corr_types, tie_ulps, pearson_values)
    if cells.counts is None or compat == "paper":
        if query_weights is None:
            queries, group = np.unique(cells.row_q[r0:r1], return_inverse=True)
            half = np.zeros(len(queries))
            half[group] = cells.row_half[r0:r1]
            weights = np.stack([np.ones(len(queries)), half == 0, half == 1]).astype(np.float64)
        else:  # every query's column: the kernel reads the ones of this segment's samples
            weights, group = query_weights, cells.row_q[r0:r1]
    if cells.counts is None:
        curves = sample_correlations(values, local_cell, cells.row_target[r0:r1], group, weights, corr_types, tie_ulps,
                                     pearson_values=pearson_values, kendall_alphas=kendall_alphas)
    if compat == "paper" and "pearson" in curves:
        order = np.argsort(cells.row_file[r0:r1], kind="stable")
        _paper_pearson(curves["pearson"], values, local_cell[order], cells.row_target[r0:r1][order],
                       weights[:, group[order]])
    return curves


def _paper_pearson(pearson: np.ndarray, values: np.ndarray, cell: np.ndarray, target: np.ndarray,
                   row_weights: np.ndarray) -> None:
    """In place: Pearson (T, A) as scipy's ``pearsonr`` on the per-sample arrays in file order, where it is noise.

    ``values`` (A, C) per cell; ``cell``, ``target`` per sample in the graded table's order;
    ``row_weights`` (T, n) each sample's multiplicity in table t. Replaced are the (t, a) whose
    values over the cells of table t spread by at most :data:`PAPER_PEARSON_NOISE` of their
    largest magnitude without being equal: there r is made by the rounding of the values (its
    error is about eps / spread), so only the paper's own computation, with its summation order,
    gives the paper's number.
    """
    weight = np.zeros((values.shape[1], row_weights.shape[0]))
    np.add.at(weight, cell, row_weights.T)
    values = np.ascontiguousarray(values, np.float64)
    noise = np.zeros(pearson.shape, dtype=np.bool_)
    _rounding_noise(values, np.argsort(values, axis=-1, kind="stable"), np.ascontiguousarray(weight.T > 0),
                    PAPER_PEARSON_NOISE, noise)
    if not noise.any():
        return
    from scipy import stats  # imported only when needed (see correlations.sample_correlation)

    with warnings.catch_warnings():  # scipy warns that such input is nearly constant: that is the point here
        warnings.simplefilter("ignore", stats.NearConstantInputWarning)
        for t, a in zip(*np.nonzero(noise), strict=True):
            repeats = row_weights[t].astype(np.int64)
            x, y = np.repeat(values[a, cell], repeats), np.repeat(target, repeats)
            pearson[t, a] = sample_correlation(x, y, "pearson")


def null_reasons(cells: MeasureCells, value: np.ndarray) -> np.ndarray:
    """(S, corr types) reason of :data:`NULL_REASONS` for each null value of ``value`` (None where it
    is defined): fewer than 2 samples in the segment, else one target value, else a constant measure."""
    reasons = np.full(value.shape, None, dtype=object)
    for s in range(len(cells.seg)):
        r0, r1 = cells.row_start[s], cells.row_start[s + 1]
        if r1 - r0 < 2:
            reason = NULL_REASONS[0]
        elif len(np.unique(cells.row_target[r0:r1])) < 2:
            reason = NULL_REASONS[1]
        else:
            reason = NULL_REASONS[2]
        reasons[s, np.isnan(value[s])] = reason
    return reasons


def correlate_measure(measure, cells: MeasureCells, grid, corr_types, compat):
    """Per kept segment of ``cells`` and corr type, (S, corr types) arrays: the value (for a measure
    with alpha the first maximum over ``grid``), its alpha index (-1 = none) and the cross-fitted value."""
    shape = (len(cells.seg), len(corr_types))
    value, value_crossfit = np.full(shape, np.nan), np.full(shape, np.nan)
    alpha_index = np.full(shape, -1)
    measure_grid = grid if measure.has_alpha else np.zeros(1)
    for s in range(len(cells.seg)):
        curves = segment_curves(measure, cells, s, measure_grid, corr_types, compat)
        for k, corr_type in enumerate(corr_types):
            best, index = first_max(curves[corr_type][0])
            value[s, k], alpha_index[s, k] = best, index
            if measure.has_alpha:
                value_crossfit[s, k] = crossfit(curves[corr_type][1], curves[corr_type][2])[0]
            else:
                value_crossfit[s, k] = best
    return value, alpha_index, value_crossfit


def bootstrap_measure(measure, cells: MeasureCells, grid, corr_types, compat, alpha_index, weights) -> np.ndarray:
    """(S, corr types, R) correlations on the R resamples of ``weights`` (R, Q), each at the alpha
    ``alpha_index`` chose on the full data (NaN where it chose none). Kendall's S (per-sample
    path) is counted only at the alphas a Kendall type chose. The per-sample path reads the
    weights query by query: in Fortran order (:func:`sample_weights`) each query's are contiguous."""
    out = np.full((len(cells.seg), len(corr_types), weights.shape[0]), np.nan)
    kendall = np.isin(corr_types, KENDALL_TYPES)
    for s in range(len(cells.seg)):
        chosen = alpha_index[s]
        if (chosen < 0).all():
            continue
        distinct = np.unique(chosen[chosen >= 0])
        grid_values = grid[distinct] if measure.has_alpha else np.zeros(1)
        kendall_alphas = np.isin(distinct, chosen[kendall & (chosen >= 0)])
        curves = segment_curves(measure, cells, s, grid_values, corr_types, compat, weights, kendall_alphas)
        for k, corr_type in enumerate(corr_types):
            if chosen[k] >= 0:
                out[s, k] = curves[corr_type][:, int(np.searchsorted(distinct, chosen[k]))]
    return out


def sample_weights(weights: np.ndarray, cells: MeasureCells, transposed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The resample weights for :func:`bootstrap_measure` on ``cells`` and the copy to keep for the
    per-sample path: ``weights`` itself on the count path, else ``transposed``, made from ``weights``
    the first time in Fortran order (each query's resamples contiguous) and as int16 when the
    multiplicities fit (a quarter of the bytes the kernel reads)."""
    if cells.counts is not None:
        return weights, transposed
    if transposed is None:
        transposed = np.asfortranarray(weights, dtype=np.int16)
        if not np.array_equal(transposed, weights):
            transposed = np.asfortranarray(weights)
    return transposed, transposed
