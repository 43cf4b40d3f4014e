"""Numba kernels of the exact correlations; the documented functions are in :mod:`.correlations` and
:mod:`.sample_correlations`, which validate their inputs and call these.

Count tables (:func:`_correlate_table`): one pass over the cells sorted by value per (table,
alpha). Per-sample targets (:func:`_correlate_samples`): target moments per cell, then Kendall's
S by the pair-sign matrix walked over the alphas or by a Fenwick sweep per alpha. Both end in
:func:`_store_correlations`. Output layout: out[type, table, alpha] for the types (spearman,
pearson, tau-b, tau-c).
"""

from __future__ import annotations

import numba
import numpy as np

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


@numba.njit(cache=True)
def _store_correlations(out, t, a, n, distinct_x, distinct_y, cov_rank, var_x_rank, var_y_rank, cov_value, var_x_value,
                       var_y_value, s, x_ties, y_ties):
    """out[type, t, a] for types (spearman, pearson, tau-b, tau-c) from the sums of one table.

    Spearman = cov_rank / sqrt(var_x_rank var_y_rank) (Pearson on midranks), Pearson =
    cov_value / sqrt(var_x_value var_y_value), with S = concordant - discordant pairs, n0 =
    n(n-1)/2: tau-b = S / sqrt((n0 - x_ties)(n0 - y_ties)), tau-c = 2S / (n^2 (m-1)/m),
    m = min(distinct_x, distinct_y). NaN when n < 2 or either side has fewer than 2 distinct values;
    Pearson NaN too when its values are constant in float64 although the exact order tells them
    apart (values closer than an ulp: no variance to divide by).
    """
    if n < 2 or distinct_x < 2 or distinct_y < 2:
        for k in range(4):
            out[k, t, a] = np.nan
        return
    pairs = n * (n - 1.0) / 2.0
    out[0, t, a] = cov_rank / np.sqrt(var_x_rank * var_y_rank)
    var_value = var_x_value * var_y_value
    out[1, t, a] = min(1.0, max(-1.0, cov_value / np.sqrt(var_value))) if var_value > 0 else np.nan
    out[2, t, a] = min(1.0, max(-1.0, s / np.sqrt(pairs - x_ties) / np.sqrt(pairs - y_ties)))
    classes = min(distinct_x, distinct_y)
    out[3, t, a] = min(1.0, max(-1.0, 2.0 * s / (n * n * (classes - 1.0) / classes)))


TABLE_CHUNK = 32
"""Count tables correlated together by :func:`_correlate_counts` (tables are the inner axis of its arrays)."""


@numba.njit(cache=True)
def _close_groups(stats, grade_cum, below, group_grades, group_w_rank, mean_rank, total, lower):
    """Add one tie group's terms to ``stats`` (5, W): cov_rank, var_rank, kendall_s, x_ties, distinct_x, per table.

    ``group_grades`` (G, W) and ``group_w_rank`` (W,) are the group's sums; they are added to
    ``grade_cum`` and ``below`` and reset. With the group's total count m and midrank deviation
    dx: cov_rank += dx group_w_rank, var_rank += m dx^2, x_ties += m(m-1)/2, distinct_x += [m > 0];
    Kendall's S gains, per grade j, (group samples above grade j - below it) times the lower
    groups' samples of grade j. A table in which the group is empty gains zeros. ``total``,
    ``lower`` (W,): scratch. Every loop runs over the tables, innermost.
    """
    n_grades, width = group_grades.shape
    total[:] = 0.0
    for j in range(n_grades):
        for t in range(width):
            total[t] += group_grades[j, t]
    for t in range(width):
        m = total[t]
        dx = below[t] + (m + 1.0) / 2.0 - mean_rank[t]
        stats[0, t] += dx * group_w_rank[t]
        stats[1, t] += m * dx * dx
        stats[3, t] += m * (m - 1.0) / 2.0
        stats[4, t] += 1.0 if m > 0 else 0.0
        below[t] += m
        group_w_rank[t] = 0.0
        lower[t] = 0.0
    for j in range(n_grades):
        for t in range(width):
            count = group_grades[j, t]
            stats[2, t] += (total[t] - lower[t] - count - lower[t]) * grade_cum[j, t]
            lower[t] += count
            grade_cum[j, t] += count
            group_grades[j, t] = 0.0


@numba.njit(cache=True)
def _correlate_counts(sorted_values, order, pearson_values, table, grade_values, out, first):
    """out[type, first + t, a] for types (spearman, pearson, tau-b, tau-c) of the count tables ``table`` (C, G, W).

    ``sorted_values``/``order`` (A, C): cell values sorted ascending and the cell index of each,
    which decide ranks and ties; ``pearson_values`` (A, C), by cell: the values Pearson's r is
    computed from; ``table[c, g, t]`` the count of cell c and grade g in table t (tables
    innermost: every loop runs over the W tables at once). One pass over the sorted cells per
    alpha, merging equal values.
    """
    n_alphas, n_cells = sorted_values.shape
    _, n_grades, width = table.shape
    rows = np.zeros((n_cells, width))
    grade_totals = np.zeros((n_grades, width))
    for c in range(n_cells):
        for j in range(n_grades):
            for t in range(width):
                rows[c, t] += table[c, j, t]
                grade_totals[j, t] += table[c, j, t]
    n = np.zeros(width)
    distinct_y = np.zeros(width)
    mean_y = np.zeros(width)
    for j in range(n_grades):
        for t in range(width):
            n[t] += grade_totals[j, t]
            if grade_totals[j, t] > 0:
                distinct_y[t] += 1.0
            mean_y[t] += grade_totals[j, t] * grade_values[j]
    mean_rank = np.empty(width)
    for t in range(width):
        mean_rank[t] = (n[t] + 1.0) / 2.0
        mean_y[t] = mean_y[t] / n[t] if n[t] > 0 else 0.0
    dy_rank = np.zeros((n_grades, width))
    dy_value = np.zeros((n_grades, width))
    var_y_rank = np.zeros(width)
    var_y_value = np.zeros(width)
    y_ties = np.zeros(width)
    cum = np.zeros(width)
    for j in range(n_grades):
        for t in range(width):
            total = grade_totals[j, t]
            dy_rank[j, t] = cum[t] + (total + 1.0) / 2.0 - mean_rank[t]
            dy_value[j, t] = grade_values[j] - mean_y[t]
            cum[t] += total
            var_y_rank[t] += total * dy_rank[j, t] * dy_rank[j, t]
            var_y_value[t] += total * dy_value[j, t] * dy_value[j, t]
            y_ties[t] += total * (total - 1.0) / 2.0
    w_rank = np.zeros((n_cells, width))
    w_value = np.zeros((n_cells, width))
    for c in range(n_cells):
        for j in range(n_grades):
            for t in range(width):
                w_rank[c, t] += table[c, j, t] * dy_rank[j, t]
                w_value[c, t] += table[c, j, t] * dy_value[j, t]
    stats = np.zeros((5, width))
    grade_cum = np.zeros((n_grades, width))
    group_grades = np.zeros((n_grades, width))
    group_w_rank = np.zeros(width)
    scratch = np.zeros((2, width))
    below = np.zeros(width)
    mean_x = np.zeros(width)
    cov_value = np.zeros(width)
    var_x_value = np.zeros(width)
    for a in range(n_alphas):
        mean_x[:] = 0.0
        for i in range(n_cells):
            c = order[a, i]
            x = pearson_values[a, c]
            for t in range(width):
                mean_x[t] += rows[c, t] * x
        for t in range(width):
            mean_x[t] = mean_x[t] / n[t] if n[t] > 0 else 0.0
        cov_value[:] = 0.0
        var_x_value[:] = 0.0
        stats[:] = 0.0
        grade_cum[:] = 0.0
        below[:] = 0.0
        group_w_rank[:] = 0.0
        for i in range(n_cells):
            if i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]:
                _close_groups(stats, grade_cum, below, group_grades, group_w_rank, mean_rank, scratch[0], scratch[1])
            c = order[a, i]
            x = pearson_values[a, c]
            for t in range(width):
                dx = x - mean_x[t]
                cov_value[t] += dx * w_value[c, t]
                var_x_value[t] += rows[c, t] * dx * dx
                group_w_rank[t] += w_rank[c, t]
            for j in range(n_grades):
                for t in range(width):
                    group_grades[j, t] += table[c, j, t]
        _close_groups(stats, grade_cum, below, group_grades, group_w_rank, mean_rank, scratch[0], scratch[1])
        for t in range(width):
            _store_correlations(out, first + t, a, n[t], stats[4, t], distinct_y[t], stats[0, t], stats[1, t],
                               var_y_rank[t], cov_value[t], var_x_value[t], var_y_value[t], stats[2, t], stats[3, t],
                               y_ties[t])


@numba.njit(cache=True)
def _correlate_table(sorted_values, order, pearson_values, counts, grade_values, out):
    """Kernel of :func:`.correlations.table_correlations`: out[type, t, a] of the count tables ``counts`` (T, C, G).

    The tables are correlated :data:`TABLE_CHUNK` at a time by :func:`_correlate_counts`.
    """
    n_tables, n_cells, n_grades = counts.shape
    for first in range(0, n_tables, TABLE_CHUNK):
        width = min(TABLE_CHUNK, n_tables - first)
        table = np.empty((n_cells, n_grades, width))
        for t in range(width):
            for c in range(n_cells):
                for j in range(n_grades):
                    table[c, j, t] = counts[first + t, c, j]
        _correlate_counts(sorted_values, order, pearson_values, table, grade_values, out, first)


@numba.njit(cache=True)
def _correlate_resampled(sorted_values, order, pearson_values, queries, entry_start, entry_query, weights, n_grades,
                         grade_values, out):
    """out[type, r, a]: the correlations of :func:`_correlate_table` on the count table of every resample r.

    Entry e = cell * G + grade holds the samples entry_start[e]:entry_start[e+1] of ``entry_query``,
    each the index of its query in ``queries``; sample i enters table r ``weights[r, queries[entry_query[i]]]``
    times (``weights`` (R, Q)). The tables are built :data:`TABLE_CHUNK` resamples at a time, each
    entry the sum of its samples' weights, and correlated at once by :func:`_correlate_counts`.
    """
    n_resamples = weights.shape[0]
    n_cells = sorted_values.shape[1]
    n_queries = queries.shape[0]
    for first in range(0, n_resamples, TABLE_CHUNK):
        width = min(TABLE_CHUNK, n_resamples - first)
        local = np.empty((n_queries, width))
        for t in range(width):
            for k in range(n_queries):
                local[k, t] = weights[first + t, queries[k]]
        table = np.zeros((n_cells * n_grades, width))
        for e in range(n_cells * n_grades):
            for i in range(entry_start[e], entry_start[e + 1]):
                k = entry_query[i]
                for t in range(width):
                    table[e, t] += local[k, t]
        _correlate_counts(sorted_values, order, pearson_values, table.reshape((n_cells, n_grades, width)), grade_values,
                          out, first)


SAMPLE_CHUNK = 128
"""Tables correlated together by :func:`_correlate_samples` (the inner axis of its arrays, which then stay in cache)."""


@numba.njit(cache=True)
def _target_moments(block_start, cell, target, group, singles, weights, rows, w_rank, w_value, moments):
    """Per-cell and per-table target sums, all tables at once (tables are the inner axis).

    Samples are sorted by target; block b is samples block_start[b]:block_start[b+1] (equal
    targets, most often one sample); ``weights`` (Q, W). Fills rows, w_rank, w_value (C, W): per
    cell the weight, the weighted target-midrank deviations and value deviations; moments (5, W):
    n, distinct targets, target tie pairs, sum of squared rank deviations, of squared value
    deviations. A block of weight m above weight ``below`` has midrank deviation
    below + m/2 + 1/2 - (n + 1)/2: w_rank sums w (below + m/2) per sample and adds
    (1/2 - (n + 1)/2) rows at the end; the squared rank deviations are (n^3 - n - sum over blocks
    of (m^3 - m)) / 12. The terms of a one-sample block depend on its query's weight only and are
    summed by query: ``singles`` (Q,) the number of one-sample blocks of each query. Exact (integer
    and half-integer sums in float64) except for the target values' sums.
    """
    n_queries, n_tables = weights.shape
    n = np.zeros(n_tables)
    mean_y = np.zeros(n_tables)
    for i in range(cell.shape[0]):
        q = group[i]
        y = target[i]
        for t in range(n_tables):
            n[t] += weights[q, t]
            mean_y[t] += weights[q, t] * y
    for t in range(n_tables):
        mean_y[t] = mean_y[t] / n[t] if n[t] > 0 else 0.0
    cubes = np.zeros(n_tables)  # sum over blocks of m^3 - m
    for q in range(n_queries):
        count = singles[q]
        if count == 0:
            continue
        for t in range(n_tables):
            w = weights[q, t]
            moments[1, t] += count * (1.0 if w > 0 else 0.0)
            moments[2, t] += count * (w * (w - 1.0) / 2.0)
            cubes[t] += count * (w * w * w - w)
    below = np.zeros(n_tables)
    block_weight = np.zeros(n_tables)
    block_rank = np.zeros(n_tables)
    for b in range(block_start.shape[0] - 1):
        start, stop = block_start[b], block_start[b + 1]
        if stop - start == 1:  # one sample: its weight is the block's
            q, c, y = group[start], cell[start], target[start]
            for t in range(n_tables):
                w = weights[q, t]
                rank = below[t] + 0.5 * w
                below[t] += w
                dy_value = y - mean_y[t]
                rows[c, t] += w
                w_rank[c, t] += w * rank
                w_value[c, t] += w * dy_value
                moments[4, t] += w * dy_value * dy_value
            continue
        block_weight[:] = 0.0
        for i in range(start, stop):
            q = group[i]
            for t in range(n_tables):
                block_weight[t] += weights[q, t]
        for t in range(n_tables):
            m = block_weight[t]
            block_rank[t] = below[t] + 0.5 * m
            moments[1, t] += 1.0 if m > 0 else 0.0
            moments[2, t] += m * (m - 1.0) / 2.0
            cubes[t] += m * m * m - m
            below[t] += m
        for i in range(start, stop):
            q, c, y = group[i], cell[i], target[i]
            for t in range(n_tables):
                w = weights[q, t]
                dy_value = y - mean_y[t]
                rows[c, t] += w
                w_rank[c, t] += w * block_rank[t]
                w_value[c, t] += w * dy_value
                moments[4, t] += w * dy_value * dy_value
    for t in range(n_tables):
        moments[0, t] = n[t]
        moments[3, t] = (n[t] * n[t] * n[t] - n[t] - cubes[t]) / 12.0
        block_rank[t] = 0.5 - (n[t] + 1.0) / 2.0
    for c in range(rows.shape[0]):
        for t in range(n_tables):
            w_rank[c, t] += block_rank[t] * rows[c, t]


@numba.njit(cache=True)
def _pair_signs(block_start, cell, group, weights, rows, matrix):
    """matrix[t, d, c] = M[d, c] of table t: sum over samples i of cell d and j of cell c of w_i w_j sign(y_j - y_i).

    Filled row by row: a block (equal targets) with weight m of cell d in table t adds to row d
    m (rows[c] - 2 below[c]) minus m times the block's own weight of c, i.e. m (weight of cell c
    above the block - below it). ``weights`` (Q, W), ``rows`` (C, W); ``matrix`` (W, C, C), its
    rows cells innermost. Exact: integer sums in float64.
    """
    n_cells, n_tables = rows.shape
    balance = np.ascontiguousarray(rows.T)  # per table and cell: rows - 2 below
    in_block = np.zeros((n_tables, n_cells))
    seen = np.zeros(n_cells, dtype=np.bool_)
    distinct = np.empty(n_cells, dtype=np.int64)
    for b in range(block_start.shape[0] - 1):
        n_distinct = 0
        for i in range(block_start[b], block_start[b + 1]):
            d = cell[i]
            if not seen[d]:
                seen[d] = True
                distinct[n_distinct] = d
                n_distinct += 1
            w = weights[group[i]]
            for t in range(n_tables):
                in_block[t, d] += w[t]
        for k in range(n_distinct):
            d = distinct[k]
            for t in range(n_tables):
                m = in_block[t, d]
                if m == 0:
                    continue
                row = matrix[t, d]
                side = balance[t]
                for c in range(n_cells):
                    row[c] += m * side[c]
                for j in range(n_distinct):
                    row[distinct[j]] -= m * in_block[t, distinct[j]]
        for k in range(n_distinct):
            d = distinct[k]
            seen[d] = False
            for t in range(n_tables):
                balance[t, d] -= 2.0 * in_block[t, d]
                in_block[t, d] = 0.0


@numba.njit(cache=True)
def _walk_kendall(values, matrix, s_out):
    """s_out[a, t] = Kendall S of table t at alpha a, walking the alphas with insertion sorts.

    ``values`` (A, C); ``matrix`` (W, C, C) from :func:`_pair_signs`.
    P = sum over the current cell order of M[c, d] for c before d; S = P minus the pairs within
    tie groups.
    """
    n_alphas, n_cells = values.shape
    n_tables = matrix.shape[0]
    order = np.argsort(values[0], kind="mergesort")
    ordered = np.zeros(n_tables)
    for t in range(n_tables):
        for i in range(n_cells):
            row = matrix[t, order[i]]
            for j in range(i + 1, n_cells):
                ordered[t] += row[order[j]]
    for a in range(n_alphas):
        v = values[a]
        for k in range(1, n_cells):
            j = k
            while j > 0 and v[order[j - 1]] > v[order[j]]:
                c, d = order[j - 1], order[j]
                for t in range(n_tables):
                    ordered[t] += 2.0 * matrix[t, d, c]
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
                        s_out[a, t] -= matrix[t, order[i], order[j]]
            start = k


@numba.njit(cache=True)
def _sweep_kendall(block_start, cell, group, weights, cell_group, n_groups, s):
    """s[t] = Kendall S of table t at one alpha: samples in target order into a Fenwick tree of tie groups.

    ``weights`` (Q, W); ``cell_group`` (C,) the rank of each cell's tie group. For each sample j,
    S gains w_j (weight already in lower groups - weight already in higher groups); a block of equal
    targets is queried before it is inserted, so target ties count neither way. ``weights`` are
    int32 (sums below 2^30): the tree's sums are exact and fill twice the vector lanes of float64.
    """
    width = weights.shape[1]
    tree = np.zeros((n_groups + 1, width), dtype=weights.dtype)
    in_group = np.zeros((n_groups, width), dtype=weights.dtype)
    total = np.zeros(width, dtype=weights.dtype)
    lower = np.zeros(width, dtype=weights.dtype)
    s[:] = 0.0
    for b in range(block_start.shape[0] - 1):
        for i in range(block_start[b], block_start[b + 1]):
            q, g = group[i], cell_group[cell[i]]
            lower[:] = 0
            k = g
            while k > 0:
                for t in range(width):
                    lower[t] += tree[k, t]
                k -= k & -k
            for t in range(width):
                s[t] += float(weights[q, t]) * float(2 * lower[t] + in_group[g, t] - total[t])
        for i in range(block_start[b], block_start[b + 1]):
            q, g = group[i], cell_group[cell[i]]
            k = g + 1
            while k <= n_groups:
                for t in range(width):
                    tree[k, t] += weights[q, t]
                k += k & -k
            for t in range(width):
                in_group[g, t] += weights[q, t]
                total[t] += weights[q, t]


@numba.njit(cache=True)
def _correlate_samples(values, sorted_values, order, pearson_values, block_start, cell, target, group, weights, use_matrix,
                       kendall_alphas, out):
    """Kernel of :func:`.sample_correlations.sample_correlations`: out[type, t, a]; ``weights`` (Q, T), tables innermost.

    ``group`` (n,) the row of ``weights`` of each sample (the samples may use few of the Q rows).
    ``values`` (A, C) by cell and ``sorted_values``/``order`` decide ranks and ties;
    ``pearson_values`` (A, C), by cell, are what Pearson's r is computed from. Kendall's S is
    counted at the alphas where ``kendall_alphas`` (A,) is True; elsewhere both taus are NaN.
    The tables are correlated :data:`SAMPLE_CHUNK` at a time by :func:`_correlate_sample_chunk`,
    on the rows of ``weights`` (float64, or compact integers) the samples use, gathered as float64
    once per chunk.
    """
    n_tables = weights.shape[1]
    slot = np.full(weights.shape[0], -1, dtype=np.int64)
    rows_used = np.empty(cell.shape[0], dtype=np.int64)
    local_group = np.empty(cell.shape[0], dtype=np.int64)
    singles = np.zeros(cell.shape[0])
    n_used = 0
    for i in range(cell.shape[0]):
        q = group[i]
        if slot[q] < 0:
            slot[q] = n_used
            rows_used[n_used] = q
            n_used += 1
        local_group[i] = slot[q]
    for b in range(block_start.shape[0] - 1):
        if block_start[b + 1] - block_start[b] == 1:
            singles[local_group[block_start[b]]] += 1.0
    for first in range(0, n_tables, SAMPLE_CHUNK):
        width = min(SAMPLE_CHUNK, n_tables - first)
        local = np.empty((n_used, width))
        for k in range(n_used):
            for t in range(width):
                local[k, t] = weights[rows_used[k], first + t]
        _correlate_sample_chunk(values, sorted_values, order, pearson_values, block_start, cell, target, local_group,
                                singles, local, use_matrix, kendall_alphas, out, first)


@numba.njit(cache=True)
def _correlate_sample_chunk(values, sorted_values, order, pearson_values, block_start, cell, target, group, singles,
                            weights, use_matrix, kendall_alphas, out, first):
    """out[type, first + t, a] of the tables of ``weights`` (Q, W) (arguments of :func:`_correlate_samples`;
    ``singles`` as in :func:`_target_moments`).

    Target moments per cell (:func:`_target_moments`), then per alpha one pass over the cells in
    order for Spearman and Pearson (the squared rank deviations of the measure by the tie formula
    of :func:`_target_moments`); Kendall's S by the pair-sign matrices walked over the alphas
    (``use_matrix``) or by a Fenwick sweep per Kendall alpha. ValueError unless the weights are
    integers summing to less than 2^30 per table.
    """
    n_alphas, n_cells = values.shape
    n_tables = weights.shape[1]
    rows = np.zeros((n_cells, n_tables))
    w_rank = np.zeros((n_cells, n_tables))
    w_value = np.zeros((n_cells, n_tables))
    moments = np.zeros((5, n_tables))
    _target_moments(block_start, cell, target, group, singles, weights, rows, w_rank, w_value, moments)
    n = moments[0]
    kendall = np.zeros((n_alphas, n_tables))
    if use_matrix:
        matrix = np.zeros((n_tables, n_cells, n_cells))
        _pair_signs(block_start, cell, group, weights, rows, matrix)
        _walk_kendall(values, matrix, kendall)
    counts = weights.astype(np.int32)  # the sweep's weights
    if n.max() >= 2.0**30 or not np.all(counts == weights):
        raise ValueError("sample weights: expected integers summing to less than 2^30 per table")
    cell_group = np.zeros(n_cells, dtype=np.int64)
    mean_rank = np.empty(n_tables)
    for t in range(n_tables):
        mean_rank[t] = (n[t] + 1.0) / 2.0
    mean_x, cov_value, var_x_value = np.empty(n_tables), np.empty(n_tables), np.empty(n_tables)
    cov_rank, cubes, x_ties = np.empty(n_tables), np.empty(n_tables), np.empty(n_tables)
    distinct_x, below = np.empty(n_tables), np.empty(n_tables)
    group_weight, group_rank = np.zeros(n_tables), np.zeros(n_tables)
    for a in range(n_alphas):
        n_groups = 0
        for i in range(n_cells):
            if i > 0 and sorted_values[a, i] != sorted_values[a, i - 1]:
                n_groups += 1
            cell_group[order[a, i]] = n_groups
        if kendall_alphas[a] and not use_matrix:
            _sweep_kendall(block_start, cell, group, counts, cell_group, n_groups + 1, kendall[a])
        mean_x[:] = 0.0
        for c in range(n_cells):
            for t in range(n_tables):
                mean_x[t] += rows[c, t] * pearson_values[a, c]
        for t in range(n_tables):
            mean_x[t] = mean_x[t] / n[t] if n[t] > 0 else 0.0
        for array in (cov_value, var_x_value, cov_rank, cubes, x_ties, distinct_x, below):
            array[:] = 0.0
        for i in range(n_cells):
            c = order[a, i]
            x = pearson_values[a, c]
            for t in range(n_tables):
                dx_value = x - mean_x[t]
                cov_value[t] += dx_value * w_value[c, t]
                var_x_value[t] += rows[c, t] * dx_value * dx_value
                group_weight[t] += rows[c, t]
                group_rank[t] += w_rank[c, t]
            if i == n_cells - 1 or sorted_values[a, i + 1] != sorted_values[a, i]:  # a tie group ends
                for t in range(n_tables):
                    m = group_weight[t]
                    dx = below[t] + (m + 1.0) / 2.0 - mean_rank[t]
                    cov_rank[t] += dx * group_rank[t]
                    cubes[t] += m * m * m - m
                    x_ties[t] += m * (m - 1.0) / 2.0
                    distinct_x[t] += 1.0 if m > 0 else 0.0
                    below[t] += m
                    group_weight[t] = 0.0
                    group_rank[t] = 0.0
        for t in range(n_tables):
            var_x_rank = (n[t] * n[t] * n[t] - n[t] - cubes[t]) / 12.0
            _store_correlations(out, first + t, a, n[t], distinct_x[t], moments[1, t], cov_rank[t], var_x_rank,
                               moments[3, t], cov_value[t], var_x_value[t], moments[4, t], kendall[a, t], x_ties[t],
                               moments[2, t])
        if not kendall_alphas[a]:
            out[2:, first:first + n_tables, a] = np.nan


@numba.njit(cache=True)
def _rounding_noise(values, order, present, relative_spread, out):
    """out[t, a] = True where the values of the cells present in table t spread by at most ``relative_spread``.

    ``values`` (A, C) by cell, ``order`` (A, C) ascending, ``present`` (T, C). Spread = largest
    minus smallest present value, relative to the larger magnitude of the two; equal values
    (spread 0) and tables with fewer than 2 present cells are not noise.
    """
    n_tables, n_cells = present.shape
    for t in range(n_tables):
        for a in range(values.shape[0]):
            first = -1
            for i in range(n_cells):
                if present[t, order[a, i]]:
                    first = order[a, i]
                    break
            last = -1
            for i in range(n_cells - 1, -1, -1):
                if present[t, order[a, i]]:
                    last = order[a, i]
                    break
            low, high = values[a, first], values[a, last]
            out[t, a] = first >= 0 and high > low and high - low <= relative_spread * max(abs(low), abs(high))
