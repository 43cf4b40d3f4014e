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

import numba
import numpy as np
from scipy import stats

CORR_TYPES = ("spearman", "pearson", "kendall_b", "kendall_c")

MAX_TOLERANCE = 1e-12
"""Correlations within this of the maximum count as reaching it (float rounding never decides)."""

TIE_ULPS = 4
"""Values within this many units in the last place (relative) of each other tie (exact mode)."""

_EPSILON = float(np.finfo(np.float64).eps)


@numba.njit(cache=True)
def _anchor_sorted(sorted_values, ulps):
    """In place, per row of ascending values: replace each value by the anchor of its tie group."""
    tolerance = ulps * _EPSILON
    for a in range(sorted_values.shape[0]):
        row = sorted_values[a]
        anchor = row[0] if row.shape[0] > 0 else 0.0
        for i in range(row.shape[0]):
            value = row[i]
            if value - anchor <= tolerance * max(abs(anchor), abs(value)):
                row[i] = anchor
            else:
                anchor = value


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


def sample_correlation(x: np.ndarray, y: np.ndarray, corr_type: str) -> float:
    """scipy's correlation of two sample arrays: spearmanr, pearsonr, kendalltau b or c.

    NaN (never an exception) when there are fewer than 2 samples or either input is constant.
    """
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


@numba.njit(cache=True)
def store_correlations(out, t, a, n, distinct_x, distinct_y, cov_rank, var_x_rank, var_y_rank, cov_value, var_x_value,
                       var_y_value, s, x_ties, y_ties):
    """out[type, t, a] for types (spearman, pearson, tau-b, tau-c) from the sums of one table.

    Spearman = cov_rank / sqrt(var_x_rank var_y_rank) (Pearson on midranks), Pearson =
    cov_value / sqrt(var_x_value var_y_value), with S = concordant - discordant pairs, n0 =
    n(n-1)/2: tau-b = S / sqrt((n0 - x_ties)(n0 - y_ties)), tau-c = 2S / (n^2 (m-1)/m),
    m = min(distinct_x, distinct_y). NaN when n < 2 or either side has fewer than 2 distinct values.
    """
    if n < 2 or distinct_x < 2 or distinct_y < 2:
        for k in range(4):
            out[k, t, a] = np.nan
        return
    pairs = n * (n - 1.0) / 2.0
    out[0, t, a] = cov_rank / np.sqrt(var_x_rank * var_y_rank)
    out[1, t, a] = min(1.0, max(-1.0, cov_value / np.sqrt(var_x_value * var_y_value)))
    out[2, t, a] = min(1.0, max(-1.0, s / np.sqrt(pairs - x_ties) / np.sqrt(pairs - y_ties)))
    classes = min(distinct_x, distinct_y)
    out[3, t, a] = min(1.0, max(-1.0, 2.0 * s / (n * n * (classes - 1.0) / classes)))


@numba.njit(cache=True)
def _close_group(stats, n_grades, grade_cum, below, group_grades, group_u, group_w_rank, mean_rank):
    """Add one tie group's terms to ``stats`` (cov_rank, var_rank, kendall_s, x_ties, distinct_x)."""
    total = 0.0
    for j in range(n_grades):
        total += group_grades[j]
    if total > 0:
        dx = below + (total + 1.0) / 2.0 - mean_rank
        stats[0] += dx * group_w_rank
        stats[1] += total * dx * dx
        for j in range(n_grades):
            stats[2] += group_u[j] * grade_cum[j]
        stats[3] += total * (total - 1.0) / 2.0
        stats[4] += 1.0
    for j in range(n_grades):
        grade_cum[j] += group_grades[j]
        group_grades[j] = 0.0
        group_u[j] = 0.0
    return below + total


@numba.njit(cache=True)
def _correlate_sorted(sorted_values, order, counts, grade_values, out):
    """Kernel of :func:`table_correlations`: out[type, t, a] for types (spearman, pearson, tau-b, tau-c).

    ``sorted_values``/``order`` (A, C): cell values sorted ascending and the cell index of each;
    ``counts`` (T, C, G). One pass over the sorted cells per (t, a), merging equal values.
    """
    n_alphas, n_cells = sorted_values.shape
    n_tables, _, n_grades = counts.shape
    grade_cum = np.zeros(n_grades)
    group_grades = np.zeros(n_grades)
    group_u = np.zeros(n_grades)
    stats = np.zeros(5)
    for t in range(n_tables):
        table = counts[t]
        rows = np.zeros(n_cells)
        grade_totals = np.zeros(n_grades)
        for c in range(n_cells):
            for j in range(n_grades):
                rows[c] += table[c, j]
                grade_totals[j] += table[c, j]
        n = 0.0
        distinct_y = 0
        for j in range(n_grades):
            n += grade_totals[j]
            if grade_totals[j] > 0:
                distinct_y += 1
        mean_rank = (n + 1.0) / 2.0
        mean_y = 0.0
        for j in range(n_grades):
            mean_y += grade_totals[j] * grade_values[j]
        mean_y = mean_y / n if n > 0 else 0.0
        dy_rank = np.zeros(n_grades)
        dy_value = np.zeros(n_grades)
        var_y_rank = 0.0
        var_y_value = 0.0
        y_ties = 0.0
        cum = 0.0
        for j in range(n_grades):
            dy_rank[j] = cum + (grade_totals[j] + 1.0) / 2.0 - mean_rank
            dy_value[j] = grade_values[j] - mean_y
            cum += grade_totals[j]
            var_y_rank += grade_totals[j] * dy_rank[j] * dy_rank[j]
            var_y_value += grade_totals[j] * dy_value[j] * dy_value[j]
            y_ties += grade_totals[j] * (grade_totals[j] - 1.0) / 2.0
        w_rank = np.zeros(n_cells)
        w_value = np.zeros(n_cells)
        u = np.zeros((n_cells, n_grades))
        for c in range(n_cells):
            lower = 0.0
            for j in range(n_grades):
                w_rank[c] += table[c, j] * dy_rank[j]
                w_value[c] += table[c, j] * dy_value[j]
                u[c, j] = rows[c] - lower - table[c, j] - lower
                lower += table[c, j]
        for a in range(n_alphas):
            sum_x = 0.0
            for i in range(n_cells):
                sum_x += rows[order[a, i]] * sorted_values[a, i]
            mean_x = sum_x / n if n > 0 else 0.0
            cov_value = 0.0
            var_x_value = 0.0
            stats[:] = 0.0
            grade_cum[:] = 0.0
            below = 0.0
            group_w_rank = 0.0
            for i in range(n_cells):
                if i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]:
                    below = _close_group(stats, n_grades, grade_cum, below, group_grades, group_u, group_w_rank, mean_rank)
                    group_w_rank = 0.0
                c = order[a, i]
                dx = sorted_values[a, i] - mean_x
                cov_value += dx * w_value[c]
                var_x_value += rows[c] * dx * dx
                group_w_rank += w_rank[c]
                for j in range(n_grades):
                    group_grades[j] += table[c, j]
                    group_u[j] += u[c, j]
            _close_group(stats, n_grades, grade_cum, below, group_grades, group_u, group_w_rank, mean_rank)
            store_correlations(out, t, a, n, stats[4], float(distinct_y), stats[0], stats[1], var_y_rank, cov_value,
                               var_x_value, var_y_value, stats[2], stats[3], y_ties)


def table_correlations(
    values: np.ndarray, counts: np.ndarray, grade_values: np.ndarray, corr_types=CORR_TYPES, tie_ulps: int = 0
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
    taken as given: distinct).
    """
    for corr_type in corr_types:
        if corr_type not in CORR_TYPES:
            raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")
    values = np.ascontiguousarray(values, dtype=np.float64)
    counts = np.ascontiguousarray(counts, dtype=np.float64)
    order, sorted_values = sorted_tie_anchors(values, tie_ulps)
    out = np.empty((len(CORR_TYPES), counts.shape[0], values.shape[0]))
    _correlate_sorted(sorted_values, order, counts, np.asarray(grade_values, np.float64), out)
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
