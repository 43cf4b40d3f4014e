"""Exact correlations of a measure with a continuous target, from per-sample targets and weights.

A continuous target (the probability-weighted grade, the answer's token F1) takes about as many
distinct values as there are samples, so the cell x grade count table of
:mod:`retrieval_response.correlations` would be as wide as the data. The measure side still
collapses into few cells; here the target side stays per sample. Each table is a weighting of the
samples: sample i enters table t ``group_weights[t, group[i]]`` times (group = query id: 1 for the
full data, 0/1 for the halves, multiplicities for bootstrap resamples).

Per table, in one pass over the samples sorted by target: the target's midranks (ties = equal
float64 values, weighted), per cell the sums of rank and value deviations, so Spearman and Pearson
at each alpha cost one pass over the cells. Kendall's S = sum over sample pairs of
sign(dx) sign(dy) is computed one of two ways, both exact (integer sums in float64):

- ``matrix``: M[c, d] = sum_{i in c, j in d} w_i w_j sign(y_j - y_i) once per table (O(n C)); for
  a cell order, S = sum over cell pairs in different tie groups, c before d, of M[c, d]. The alpha
  grid is walked in order: the cells are re-sorted by insertion (adjacent swaps; a swap of c, d
  changes the sum by 2 M[d, c]), which costs little because consecutive alphas order cells alike.
- ``sweep``: per table and alpha, samples in target order feed a Fenwick tree over the measure's
  tie groups (O(n log C)); cheaper when there are few alphas (bootstrap at the chosen alpha).
"""

from __future__ import annotations

import numba
import numpy as np

from .correlations import CORR_TYPES, store_correlations, tie_anchors

MATRIX_BYTES = 256 * 2**20
"""Largest pair-sign matrix stack (tables x cells x cells, float64) the ``matrix`` method builds."""


@numba.njit(cache=True)
def _target_moments(block_start, cell, target, group, weights, rows, w_rank, w_value):
    """Fill per-cell weight, rank- and value-deviation sums of one table; return its target sums.

    Samples are sorted by target; block b is samples block_start[b]:block_start[b+1] (equal
    targets). Returns (n, distinct targets, target tie pairs, var of ranks, var of values).
    """
    n = 0.0
    sum_y = 0.0
    for i in range(cell.shape[0]):
        w = weights[group[i]]
        n += w
        sum_y += w * target[i]
    mean_rank = (n + 1.0) / 2.0
    mean_y = sum_y / n if n > 0 else 0.0
    below = 0.0
    distinct_y = 0.0
    y_ties = 0.0
    var_y_rank = 0.0
    var_y_value = 0.0
    for b in range(block_start.shape[0] - 1):
        block_weight = 0.0
        for i in range(block_start[b], block_start[b + 1]):
            block_weight += weights[group[i]]
        if block_weight == 0:
            continue
        dy_rank = below + (block_weight + 1.0) / 2.0 - mean_rank
        var_y_rank += block_weight * dy_rank * dy_rank
        y_ties += block_weight * (block_weight - 1.0) / 2.0
        distinct_y += 1.0
        for i in range(block_start[b], block_start[b + 1]):
            w = weights[group[i]]
            c = cell[i]
            dy_value = target[i] - mean_y
            rows[c] += w
            w_rank[c] += w * dy_rank
            w_value[c] += w * dy_value
            var_y_value += w * dy_value * dy_value
        below += block_weight
    return n, distinct_y, y_ties, var_y_rank, var_y_value


@numba.njit(cache=True)
def _pair_signs(block_start, cell, group, weights, rows, matrix):
    """matrix[c, d] = sum over samples i of cell c and j of cell d of w_i w_j sign(y_j - y_i)."""
    n_cells = rows.shape[0]
    below = np.zeros(n_cells)
    in_block = np.zeros(n_cells)
    done = np.zeros(n_cells, dtype=np.bool_)
    for b in range(block_start.shape[0] - 1):
        start, stop = block_start[b], block_start[b + 1]
        for i in range(start, stop):
            in_block[cell[i]] += weights[group[i]]
        for i in range(start, stop):
            d = cell[i]
            if done[d] or in_block[d] == 0:
                continue
            done[d] = True
            for c in range(n_cells):
                above = rows[c] - below[c] - in_block[c]
                matrix[c, d] += in_block[d] * (below[c] - above)
        for i in range(start, stop):
            d = cell[i]
            below[d] += in_block[d]
            in_block[d] = 0.0
            done[d] = False


@numba.njit(cache=True)
def _walk_kendall(values, matrices, s_out):
    """s_out[t, a] = Kendall S of table t at alpha a, walking the alphas with insertion sorts.

    ``values`` (A, C); ``matrices`` (T, C, C) pair signs. P = sum over the current cell order of
    M[c, d] for c before d; S = P minus the pairs within tie groups.
    """
    n_alphas, n_cells = values.shape
    n_tables = matrices.shape[0]
    order = np.argsort(values[0], kind="mergesort")
    ordered = np.zeros(n_tables)
    for i in range(n_cells):
        for j in range(i + 1, n_cells):
            for t in range(n_tables):
                ordered[t] += matrices[t, order[i], order[j]]
    for a in range(n_alphas):
        v = values[a]
        for k in range(1, n_cells):
            j = k
            while j > 0 and v[order[j - 1]] > v[order[j]]:
                c, d = order[j - 1], order[j]
                for t in range(n_tables):
                    ordered[t] += 2.0 * matrices[t, d, c]
                order[j - 1], order[j] = d, c
                j -= 1
        for t in range(n_tables):
            s_out[t, a] = ordered[t]
        start = 0
        for k in range(1, n_cells + 1):
            if k < n_cells and v[order[k]] == v[order[start]]:
                continue
            for i in range(start, k):
                for j in range(i + 1, k):
                    for t in range(n_tables):
                        s_out[t, a] -= matrices[t, order[i], order[j]]
            start = k


@numba.njit(cache=True)
def _sweep_kendall(block_start, cell, group, weights, cell_group, n_groups, tree):
    """Kendall S of one table at one alpha: samples in target order into a Fenwick tree of tie groups."""
    tree[:] = 0.0
    total = 0.0
    s = 0.0
    for b in range(block_start.shape[0] - 1):
        for i in range(block_start[b], block_start[b + 1]):
            w = weights[group[i]]
            if w == 0:
                continue
            g = cell_group[cell[i]]
            lower = 0.0
            k = g
            while k > 0:
                lower += tree[k]
                k -= k & -k
            lower_or_equal = 0.0
            k = g + 1
            while k > 0:
                lower_or_equal += tree[k]
                k -= k & -k
            s += w * (lower - (total - lower_or_equal))
        for i in range(block_start[b], block_start[b + 1]):
            w = weights[group[i]]
            k = cell_group[cell[i]] + 1
            while k <= n_groups:
                tree[k] += w
                k += k & -k
            total += w
    return s


@numba.njit(cache=True)
def _correlate_samples(values, sorted_values, order, block_start, cell, target, group, group_weights, use_matrix, out):
    """Kernel of :func:`sample_correlations`: out[type, t, a]."""
    n_alphas, n_cells = values.shape
    n_tables = group_weights.shape[0]
    rows = np.zeros((n_tables, n_cells))
    w_rank = np.zeros((n_tables, n_cells))
    w_value = np.zeros((n_tables, n_cells))
    moments = np.zeros((n_tables, 5))
    for t in range(n_tables):
        n, distinct_y, y_ties, var_y_rank, var_y_value = _target_moments(
            block_start, cell, target, group, group_weights[t], rows[t], w_rank[t], w_value[t]
        )
        moments[t, 0], moments[t, 1], moments[t, 2], moments[t, 3], moments[t, 4] = (
            n, distinct_y, y_ties, var_y_rank, var_y_value
        )
    kendall = np.zeros((n_tables, n_alphas))
    if use_matrix:
        matrices = np.zeros((n_tables, n_cells, n_cells))
        for t in range(n_tables):
            _pair_signs(block_start, cell, group, group_weights[t], rows[t], matrices[t])
        _walk_kendall(values, matrices, kendall)
    cell_group = np.zeros(n_cells, dtype=np.int64)
    tree = np.zeros(n_cells + 1)
    for a in range(n_alphas):
        n_groups = 0
        for i in range(n_cells):
            if i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]:
                n_groups += 1
            cell_group[order[a, i]] = n_groups
        n_groups += 1
        for t in range(n_tables):
            n = moments[t, 0]
            mean_rank = (n + 1.0) / 2.0
            sum_x = 0.0
            for c in range(n_cells):
                sum_x += rows[t, c] * values[a, c]
            mean_x = sum_x / n if n > 0 else 0.0
            cov_rank = var_x_rank = cov_value = var_x_value = x_ties = distinct_x = 0.0
            below = group_weight = group_rank = 0.0
            for i in range(n_cells + 1):
                if i == n_cells or (i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]):
                    if group_weight > 0:
                        dx = below + (group_weight + 1.0) / 2.0 - mean_rank
                        cov_rank += dx * group_rank
                        var_x_rank += group_weight * dx * dx
                        x_ties += group_weight * (group_weight - 1.0) / 2.0
                        distinct_x += 1.0
                    below += group_weight
                    group_weight = group_rank = 0.0
                    if i == n_cells:
                        break
                c = order[a, i]
                dx_value = sorted_values[a, i] - mean_x
                cov_value += dx_value * w_value[t, c]
                var_x_value += rows[t, c] * dx_value * dx_value
                group_weight += rows[t, c]
                group_rank += w_rank[t, c]
            if use_matrix:
                s = kendall[t, a]
            else:
                s = _sweep_kendall(block_start, cell, group, group_weights[t], cell_group, n_groups, tree)
            store_correlations(out, t, a, n, distinct_x, moments[t, 1], cov_rank, var_x_rank, moments[t, 3], cov_value,
                               var_x_value, moments[t, 4], s, x_ties, moments[t, 2])


def sample_correlations(
    values: np.ndarray,
    cell: np.ndarray,
    target: np.ndarray,
    group: np.ndarray,
    group_weights: np.ndarray,
    corr_types=CORR_TYPES,
    tie_ulps: int = 0,
    method: str = "auto",
) -> dict[str, np.ndarray]:
    """Exact scipy correlations between a measure given per cell and a target given per sample.

    ``values`` (A, C): the measure in each of C cells for A parameter values; ``cell`` (n,) the
    cell of each sample; ``target`` (n,) its target (float); ``group`` (n,) an index into the
    columns of ``group_weights`` (T, Q): sample i enters table t group_weights[t, group[i]] times
    (non-negative integers). Returns, per correlation type, an array (T, A): the correlation of
    the sample arrays each table expands to, as scipy defines it (NaN when fewer than 2 samples
    or either side is constant). Target ties are equal float64 values (anchor them first with
    :func:`~retrieval_response.correlations.tie_anchors` for a tolerance); measure values are
    anchored with ``tie_ulps`` as in :func:`~retrieval_response.correlations.table_correlations`.
    ``method``: how Kendall's S is counted (module docstring), ``"auto"`` the cheaper one.
    """
    for corr_type in corr_types:
        if corr_type not in CORR_TYPES:
            raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")
    values = tie_anchors(np.atleast_2d(np.asarray(values, np.float64)), tie_ulps)
    order = np.argsort(values, axis=-1, kind="stable")
    sorted_values = np.ascontiguousarray(np.take_along_axis(values, order, axis=-1))
    by_target = np.argsort(np.asarray(target, np.float64), kind="stable")
    target = np.ascontiguousarray(np.asarray(target, np.float64)[by_target])
    block_start = np.flatnonzero(np.r_[True, target[1:] != target[:-1], True]).astype(np.int64)
    group_weights = np.ascontiguousarray(group_weights, dtype=np.float64)
    n_tables, (n_alphas, n_cells), n = group_weights.shape[0], values.shape, len(target)
    use_matrix = _use_matrix(method, n_tables, n_alphas, n_cells, n)
    out = np.empty((len(CORR_TYPES), n_tables, n_alphas))
    _correlate_samples(
        values, sorted_values, order, block_start, np.ascontiguousarray(np.asarray(cell, np.int64)[by_target]), target,
        np.ascontiguousarray(np.asarray(group, np.int64)[by_target]), group_weights, use_matrix, out,
    )
    return {corr_type: out[CORR_TYPES.index(corr_type)] for corr_type in corr_types}


def _use_matrix(method: str, n_tables: int, n_alphas: int, n_cells: int, n_samples: int) -> bool:
    """``matrix`` when asked, or for ``auto`` when the sweeps cost more and the matrices fit."""
    if method not in ("auto", "matrix", "sweep"):
        raise ValueError(f"method {method!r}: expected 'auto', 'matrix' or 'sweep'")
    if method != "auto":
        return method == "matrix"
    fits = n_tables * n_cells * n_cells * 8 <= MATRIX_BYTES
    sweep_cost = n_alphas * n_samples * np.log2(n_cells + 2)
    return fits and sweep_cost > n_samples * n_cells + n_alphas * n_cells
