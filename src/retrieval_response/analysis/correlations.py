"""Exact correlations of a measure with the grade from a contingency table of counts (docs/METHODS.md#correlations).

Inside a segment a measure takes few distinct values, so the samples collapse into "cells"
(distinct feature combinations) x grade counts. Every correlation of scipy is a function of
that table: this module computes Spearman (``spearmanr``), Pearson (``pearsonr``) and Kendall
tau-b / tau-c (``kendalltau(variant=...)``) from it, vectorised over any batch of value vectors
(an alpha grid) and of count tables (data halves, bootstrap resamples).

Ties: cells are sorted by value and equal float64 values are merged, exactly as scipy sees equal
elements of the sample arrays. With ``tie_ulps`` > 0 values that differ by rounding only are
merged first (:func:`tie_anchors`), so that a measure which is constant in exact arithmetic but
spread by one unit in the last place counts as constant. Undefined correlations (fewer than 2
samples, a constant measure or a constant grade) are NaN, as in scipy, never an exception.
"""

from __future__ import annotations

import numpy as np

from retrieval_response.analysis._kernels import _anchor_sorted, _correlate_resampled, _correlate_table

CORR_TYPES = ("spearman", "pearson", "kendall_b", "kendall_c")


MAX_TOLERANCE = 1e-12
"""Correlations within this of the maximum count as reaching it (float rounding never decides)."""


TIE_ULPS = 4
"""Values within this many units in the last place (relative) of each other tie (exact mode)."""


def tie_anchors(values: np.ndarray, ulps: int = TIE_ULPS) -> np.ndarray:
    """``values`` (..., n) with each value replaced by the anchor of its tie group along the last axis.

    In ascending order the smallest value opens a group and is its anchor; each next value joins
    the open group when value - anchor <= ulps * eps * max(|anchor|, |value|) (eps = 2^-52, so
    ``ulps`` units in the last place relative to the larger of the two), otherwise it opens a new
    group. Groups are anchored, not chained: values spread by more than the tolerance never
    merge. ``ulps`` = 0 leaves the values unchanged (ties are exactly equal values, as in scipy).
    """
    values = np.asarray(values, np.float64)
    if ulps == 0:
        return values.copy()
    rows = values.reshape(-1, values.shape[-1])
    order, anchored = sorted_tie_anchors(rows, ulps)
    out = np.empty_like(rows)
    np.put_along_axis(out, order, anchored, axis=-1)
    return out.reshape(values.shape)


def sorted_tie_anchors(values: np.ndarray, ulps: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, sorted anchored values) of each row of ``values`` (A, n), ascending, stable.

    Anchoring keeps the order, so ``order`` sorts the anchored values too (:func:`tie_anchors`).
    """
    order = np.argsort(values, axis=-1, kind="stable")
    anchored = np.ascontiguousarray(np.take_along_axis(values, order, axis=-1))
    if ulps:
        _anchor_sorted(anchored, float(ulps))
    return order, anchored


def unit_scaled(values: np.ndarray) -> np.ndarray:
    """``values`` (..., n) times the power of two that brings the largest finite magnitude of each
    row (last axis) into [0.5, 1); a row of zeros stays. Pearson's r is invariant under scaling,
    and its sums of squared deviations of values as large as 1e300 overflow to inf (r would read
    0) and of values as small as 1e-300 underflow to 0 (r would read NaN): on scaled values they
    do neither. A power of two changes no value's digits (only a value below 2^-1074 of its row's
    largest becomes 0), so what Pearson reads is the data's; ranks and ties are taken from the
    values as given, never from these."""
    values = np.asarray(values, np.float64)
    magnitude = np.max(np.abs(np.where(np.isfinite(values), values, 0.0)), axis=-1, keepdims=True, initial=0.0)
    exponent = np.frexp(magnitude)[1]
    return np.ascontiguousarray(np.ldexp(values, -exponent))


def _pearson_values(pearson_values: np.ndarray | None, order: np.ndarray, sorted_values: np.ndarray) -> np.ndarray:
    """``pearson_values`` as float64 (A, C), or else the anchored values put back in cell order;
    each row :func:`unit_scaled`."""
    if pearson_values is not None:
        return unit_scaled(np.broadcast_to(np.asarray(pearson_values, np.float64), sorted_values.shape))
    by_cell = np.empty_like(sorted_values)
    np.put_along_axis(by_cell, order, sorted_values, axis=-1)
    return unit_scaled(by_cell)


def sample_correlation(x: np.ndarray, y: np.ndarray, corr_type: str) -> float:
    """scipy's correlation of two sample arrays: spearmanr, pearsonr, kendalltau b or c.

    NaN (never an exception) when there are fewer than 2 samples or either input is constant.
    scipy.stats is imported here, not with this module: importing it costs a job about a second,
    and the analysis calls this function only for the rare Pearson values made of rounding noise.
    """
    from scipy import stats

    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    if corr_type == "spearman":
        return float(stats.spearmanr(x, y).statistic)
    if corr_type == "pearson":
        return float(stats.pearsonr(x, y).statistic)
    if corr_type in ("kendall_b", "kendall_c"):
        return float(stats.kendalltau(x, y, variant=corr_type[-1]).statistic)
    raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")


def table_correlations(
    values: np.ndarray,
    counts: np.ndarray,
    grade_values: np.ndarray,
    corr_types=CORR_TYPES,
    tie_ulps: int = 0,
    pearson_values: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Exact scipy correlations between a measure and the grade from per-cell grade counts.

    ``values`` (A, C): the measure's value in each of C cells for A parameter values (an alpha
    grid; A = 1 without alpha). ``counts`` (T, C, G): T tables (full data, halves, bootstrap
    resamples) of the number of samples of each cell with each grade (non-negative integers),
    ``grade_values`` (G,) ascending. Returns, per correlation type, an array (T, A): the
    correlation of the sample arrays each table expands to, as scipy defines it (NaN when
    fewer than 2 samples or either side is constant).

    Spearman = Pearson on midranks (ranks of tie groups of equal float64 values); Kendall
    S = concordant - discordant pairs, tau-b = S / sqrt((n0 - n1)(n0 - n2)),
    tau-c = 2S / (n^2 (m-1)/m), m = min(distinct values, distinct grades). ``tie_ulps`` > 0:
    each alpha's values are first replaced by their :func:`tie_anchors` (``grade_values`` are
    taken as given: distinct). ``pearson_values`` (A, C): what Pearson's r is computed from
    instead of the (anchored) values, e.g. the values minus a reference value, computed more
    accurately than float64 values can be subtracted (r is invariant under a shift). Pearson's sums
    are taken on :func:`unit_scaled` values and grade values, so r is right for any finite values.
    """
    for corr_type in corr_types:
        if corr_type not in CORR_TYPES:
            raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")
    values = np.ascontiguousarray(values, dtype=np.float64)
    counts = np.ascontiguousarray(counts, dtype=np.float64)
    order, sorted_values = sorted_tie_anchors(values, tie_ulps)
    pearson_values = _pearson_values(pearson_values, order, sorted_values)
    out = np.empty((len(CORR_TYPES), counts.shape[0], values.shape[0]))
    _correlate_table(sorted_values, order, pearson_values, counts, unit_scaled(grade_values), out)
    return {corr_type: out[CORR_TYPES.index(corr_type)] for corr_type in corr_types}


def resampled_table_correlations(
    values: np.ndarray,
    query: np.ndarray,
    cell: np.ndarray,
    grade: np.ndarray,
    query_weights: np.ndarray,
    grade_values: np.ndarray,
    corr_types=CORR_TYPES,
    tie_ulps: int = 0,
    pearson_values: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """:func:`table_correlations` of the count tables of query resamples, built as they are correlated.

    ``query``, ``cell``, ``grade`` (n,): each sample's query (a column of ``query_weights``), cell
    (a column of ``values``) and grade index (into ``grade_values``); ``query_weights`` (R, Q)
    non-negative integers. Table r counts sample i ``query_weights[r, query[i]]`` times:
    table_r[c, g] = sum of query_weights[r, query[i]] over the samples i of cell c and grade g,
    the tables of :func:`.bootstrap.resampled_tables`. Returns, per correlation type, an array
    (R, A), equal to ``table_correlations(values, tables, ...)`` on those tables; the other
    arguments are as there. The tables are never held all at once: they are built and correlated
    a few resamples at a time, from the weights of the queries the samples have.
    """
    for corr_type in corr_types:
        if corr_type not in CORR_TYPES:
            raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")
    values = np.ascontiguousarray(values, dtype=np.float64)
    order, sorted_values = sorted_tie_anchors(values, tie_ulps)
    pearson_values = _pearson_values(pearson_values, order, sorted_values)
    queries, sample_query = np.unique(np.asarray(query, np.int64), return_inverse=True)
    grade_values = np.asarray(grade_values, np.float64)
    entry = np.asarray(cell, np.int64) * len(grade_values) + np.asarray(grade, np.int64)
    by_entry = np.argsort(entry, kind="stable")
    entry_start = np.searchsorted(entry[by_entry], np.arange(values.shape[1] * len(grade_values) + 1))
    weights = np.ascontiguousarray(query_weights, dtype=np.float64)
    out = np.empty((len(CORR_TYPES), weights.shape[0], values.shape[0]))
    _correlate_resampled(sorted_values, order, pearson_values, queries, entry_start.astype(np.int64),
                         sample_query[by_entry].astype(np.int64), weights, len(grade_values), unit_scaled(grade_values),
                         out)
    return {corr_type: out[CORR_TYPES.index(corr_type)] for corr_type in corr_types}


def first_max(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maxima over the last axis (the alpha grid) and the first index reaching each maximum.

    "Reaching" means within :data:`MAX_TOLERANCE` of the maximum, so float rounding never decides
    between equal correlations; NaN never wins. An all-NaN curve gives (NaN, -1).
    """
    curves = np.asarray(curves, np.float64)
    best = np.max(np.where(np.isnan(curves), -np.inf, curves), axis=-1)
    reached = ~np.isnan(curves) & (curves >= best[..., None] - MAX_TOLERANCE)
    index = np.where(reached.any(axis=-1), np.argmax(reached, axis=-1), -1)
    return np.where(index >= 0, best, np.nan), index
