"""Exact correlations of a measure with a continuous target, from per-sample targets and weights.

A continuous target (the probability-weighted grade, the answer's token F1) takes about as many
distinct values as there are samples, so the cell x grade count table of
:mod:`retrieval_response.analysis.correlations` would be as wide as the data. The measure side still
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
- ``sweep``: per alpha, samples in target order feed a Fenwick tree over the measure's tie groups,
  for all tables at once (O(n log C) per table); cheaper when there are few alphas (bootstrap at
  the chosen alpha).
"""

from __future__ import annotations

import numba
import numpy as np

from retrieval_response.analysis.correlations import CORR_TYPES, sorted_tie_anchors, store_correlations

MATRIX_BYTES = 256 * 2**20
"""Largest pair-sign matrix stack (tables x cells x cells, float64) the ``matrix`` method builds."""


@numba.njit(cache=True)
def _target_moments(block_start, cell, target, group, weights, rows, w_rank, w_value, moments):
    """Per-cell and per-table target sums, all tables at once (tables are the inner axis).

    Samples are sorted by target; block b is samples block_start[b]:block_start[b+1] (equal
    targets); ``weights`` (Q, T). Fills rows, w_rank, w_value (C, T): per cell the weight, the
    weighted target-midrank deviations and value deviations; moments (5, T): n, distinct targets,
    target tie pairs, sum of squared rank deviations, of squared value deviations.
    """
    n_tables = weights.shape[1]
    n = np.zeros(n_tables)
    mean_y = np.zeros(n_tables)
    for i in range(cell.shape[0]):
        w = weights[group[i]]
        for t in range(n_tables):
            n[t] += w[t]
            mean_y[t] += w[t] * target[i]
    for t in range(n_tables):
        mean_y[t] = mean_y[t] / n[t] if n[t] > 0 else 0.0
    below = np.zeros(n_tables)
    block_weight = np.zeros(n_tables)
    dy_rank = np.zeros(n_tables)
    for b in range(block_start.shape[0] - 1):
        block_weight[:] = 0.0
        for i in range(block_start[b], block_start[b + 1]):
            w = weights[group[i]]
            for t in range(n_tables):
                block_weight[t] += w[t]
        for t in range(n_tables):
            dy_rank[t] = below[t] + (block_weight[t] + 1.0) / 2.0 - (n[t] + 1.0) / 2.0
            moments[3, t] += block_weight[t] * dy_rank[t] * dy_rank[t]
            moments[2, t] += block_weight[t] * (block_weight[t] - 1.0) / 2.0
            if block_weight[t] > 0:
                moments[1, t] += 1.0
            below[t] += block_weight[t]
        for i in range(block_start[b], block_start[b + 1]):
            w = weights[group[i]]
            c = cell[i]
            for t in range(n_tables):
                dy_value = target[i] - mean_y[t]
                rows[c, t] += w[t]
                w_rank[c, t] += w[t] * dy_rank[t]
                w_value[c, t] += w[t] * dy_value
                moments[4, t] += w[t] * dy_value * dy_value
    moments[0] = n


@numba.njit(cache=True)
def _pair_signs(block_start, cell, group, weights, rows, matrix):
    """matrix[c, d, t] = M[c, d] of table t: sum over samples i of cell c and j of cell d of w_i w_j sign(y_j - y_i).

    Filled row by row: when a block holds samples of cell d, row d gains their pairs with every
    cell's samples below and above them. ``weights`` (Q, T), ``rows`` (C, T); tables innermost.
    """
    n_cells, n_tables = rows.shape
    below = np.zeros((n_cells, n_tables))
    in_block = np.zeros((n_cells, n_tables))
    done = np.zeros(n_cells, dtype=np.bool_)
    for b in range(block_start.shape[0] - 1):
        start, stop = block_start[b], block_start[b + 1]
        for i in range(start, stop):
            w = weights[group[i]]
            for t in range(n_tables):
                in_block[cell[i], t] += w[t]
        for i in range(start, stop):
            d = cell[i]
            if done[d]:
                continue
            done[d] = True
            for c in range(n_cells):
                for t in range(n_tables):
                    above = rows[c, t] - below[c, t] - in_block[c, t]
                    matrix[d, c, t] += in_block[d, t] * (above - below[c, t])
        for i in range(start, stop):
            d = cell[i]
            for t in range(n_tables):
                below[d, t] += in_block[d, t]
                in_block[d, t] = 0.0
            done[d] = False


@numba.njit(cache=True)
def _walk_kendall(values, matrix, s_out):
    """s_out[a, t] = Kendall S of table t at alpha a, walking the alphas with insertion sorts.

    ``values`` (A, C); ``matrix`` (C, C, T) from :func:`_pair_signs`.
    P = sum over the current cell order of M[c, d] for c before d; S = P minus the pairs within
    tie groups.
    """
    n_alphas, n_cells = values.shape
    n_tables = matrix.shape[2]
    order = np.argsort(values[0], kind="mergesort")
    ordered = np.zeros(n_tables)
    for i in range(n_cells):
        for j in range(i + 1, n_cells):
            for t in range(n_tables):
                ordered[t] += matrix[order[i], order[j], t]
    for a in range(n_alphas):
        v = values[a]
        for k in range(1, n_cells):
            j = k
            while j > 0 and v[order[j - 1]] > v[order[j]]:
                c, d = order[j - 1], order[j]
                for t in range(n_tables):
                    ordered[t] += 2.0 * matrix[d, c, t]
                order[j - 1], order[j] = d, c
                j -= 1
        for t in range(n_tables):
            s_out[a, t] = ordered[t]
        start = 0
        for k in range(1, n_cells + 1):
            if k < n_cells and v[order[k]] == v[order[start]]:
                continue
            for i in range(start, k):
                for j in range(i + 1, k):
                    for t in range(n_tables):
                        s_out[a, t] -= matrix[order[i], order[j], t]
            start = k


SWEEP_CHUNK = 64
"""Tables swept together by :func:`_sweep_kendall` (their Fenwick trees stay in cache)."""


@numba.njit(cache=True)
def _sweep_kendall(block_start, cell, group, weights, cell_group, n_groups, s_out):
    """Kendall S of every table at one alpha: samples in target order into a Fenwick tree of tie groups.

    ``weights`` (Q, T); ``cell_group`` (C,) the rank of each cell's tie group. For each sample j,
    S gains w_j (weight already in lower groups - weight already in higher groups); a block of equal
    targets is queried before it is inserted, so target ties count neither way. Tables are swept
    :data:`SWEEP_CHUNK` at a time.
    """
    n_tables = weights.shape[1]
    for first in range(0, n_tables, SWEEP_CHUNK):
        last = min(first + SWEEP_CHUNK, n_tables)
        width = last - first
        tree = np.zeros((n_groups + 1, width))
        in_group = np.zeros((n_groups, width))
        total = np.zeros(width)
        lower = np.zeros(width)
        s = np.zeros(width)
        for b in range(block_start.shape[0] - 1):
            for i in range(block_start[b], block_start[b + 1]):
                w = weights[group[i], first:last]
                g = cell_group[cell[i]]
                lower[:] = 0.0
                k = g
                while k > 0:
                    for t in range(width):
                        lower[t] += tree[k, t]
                    k -= k & -k
                for t in range(width):
                    s[t] += w[t] * (2.0 * lower[t] + in_group[g, t] - total[t])
            for i in range(block_start[b], block_start[b + 1]):
                w = weights[group[i], first:last]
                g = cell_group[cell[i]]
                k = g + 1
                while k <= n_groups:
                    for t in range(width):
                        tree[k, t] += w[t]
                    k += k & -k
                for t in range(width):
                    in_group[g, t] += w[t]
                    total[t] += w[t]
        s_out[first:last] = s


@numba.njit(cache=True)
def _correlate_samples(values, sorted_values, order, block_start, cell, target, group, weights, use_matrix, out):
    """Kernel of :func:`sample_correlations`: out[type, t, a]; ``weights`` (Q, T), tables innermost."""
    n_alphas, n_cells = values.shape
    n_tables = weights.shape[1]
    rows = np.zeros((n_cells, n_tables))
    w_rank = np.zeros((n_cells, n_tables))
    w_value = np.zeros((n_cells, n_tables))
    moments = np.zeros((5, n_tables))
    _target_moments(block_start, cell, target, group, weights, rows, w_rank, w_value, moments)
    n = moments[0]
    kendall = np.zeros((n_alphas, n_tables))
    if use_matrix:
        matrix = np.zeros((n_cells, n_cells, n_tables))
        _pair_signs(block_start, cell, group, weights, rows, matrix)
        _walk_kendall(values, matrix, kendall)
    cell_group = np.zeros(n_cells, dtype=np.int64)
    sums = np.zeros((9, n_tables))  # mean_x, cov_rank, var_x_rank, cov_value, var_x_value, x_ties, distinct_x, below, -
    group_weight = np.zeros(n_tables)
    group_rank = np.zeros(n_tables)
    for a in range(n_alphas):
        n_groups = 0
        for i in range(n_cells):
            if i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]:
                n_groups += 1
            cell_group[order[a, i]] = n_groups
        if not use_matrix:
            _sweep_kendall(block_start, cell, group, weights, cell_group, n_groups + 1, kendall[a])
        sums[:] = 0.0
        for c in range(n_cells):
            for t in range(n_tables):
                sums[0, t] += rows[c, t] * values[a, c]
        for t in range(n_tables):
            sums[0, t] = sums[0, t] / n[t] if n[t] > 0 else 0.0
        group_weight[:] = 0.0
        group_rank[:] = 0.0
        for i in range(n_cells + 1):
            if i == n_cells or (i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]):
                for t in range(n_tables):
                    if group_weight[t] > 0:
                        dx = sums[7, t] + (group_weight[t] + 1.0) / 2.0 - (n[t] + 1.0) / 2.0
                        sums[1, t] += dx * group_rank[t]
                        sums[2, t] += group_weight[t] * dx * dx
                        sums[5, t] += group_weight[t] * (group_weight[t] - 1.0) / 2.0
                        sums[6, t] += 1.0
                    sums[7, t] += group_weight[t]
                    group_weight[t] = 0.0
                    group_rank[t] = 0.0
                if i == n_cells:
                    break
            c = order[a, i]
            for t in range(n_tables):
                dx_value = sorted_values[a, i] - sums[0, t]
                sums[3, t] += dx_value * w_value[c, t]
                sums[4, t] += rows[c, t] * dx_value * dx_value
                group_weight[t] += rows[c, t]
                group_rank[t] += w_rank[c, t]
        for t in range(n_tables):
            store_correlations(out, t, a, n[t], sums[6, t], moments[1, t], sums[1, t], sums[2, t], moments[3, t],
                               sums[3, t], sums[4, t], moments[4, t], kendall[a, t], sums[5, t], moments[2, t])


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
    :func:`~retrieval_response.analysis.correlations.tie_anchors` for a tolerance); measure values are
    anchored with ``tie_ulps`` (same function) as in :func:`~retrieval_response.analysis.correlations.table_correlations`.
    ``method``: how Kendall's S is counted (module docstring), ``"auto"`` the cheaper one.
    """
    for corr_type in corr_types:
        if corr_type not in CORR_TYPES:
            raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")
    order, sorted_values = sorted_tie_anchors(np.atleast_2d(np.asarray(values, np.float64)), tie_ulps)
    values = np.empty_like(sorted_values)
    np.put_along_axis(values, order, sorted_values, axis=-1)
    by_target = np.argsort(np.asarray(target, np.float64), kind="stable")
    target = np.ascontiguousarray(np.asarray(target, np.float64)[by_target])
    block_start = np.r_[np.flatnonzero(np.r_[True, target[1:] != target[:-1]]), len(target)].astype(np.int64)
    weights = np.ascontiguousarray(np.asarray(group_weights, np.float64).T)
    n_tables, (n_alphas, n_cells), n = weights.shape[1], values.shape, len(target)
    use_matrix = _use_matrix(method, n_tables, n_alphas, n_cells, n)
    out = np.empty((len(CORR_TYPES), n_tables, n_alphas))
    _correlate_samples(
        values, sorted_values, order, block_start, np.ascontiguousarray(np.asarray(cell, np.int64)[by_target]), target,
        np.ascontiguousarray(np.asarray(group, np.int64)[by_target]), weights, use_matrix, out,
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
