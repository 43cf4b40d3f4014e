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
  for a chunk of tables at once (O(n log C) per table); cheaper when there are few alphas
  (bootstrap at the chosen alpha).
"""

from __future__ import annotations

import numpy as np

from retrieval_response.analysis._kernels import SAMPLE_CHUNK, _correlate_samples
from retrieval_response.analysis.correlations import CORR_TYPES, sorted_tie_anchors, unit_scaled

KENDALL_TYPES = ("kendall_b", "kendall_c")
"""The correlations made of Kendall's S."""
MATRIX_BYTES = 256 * 2**20
"""Largest pair-sign matrix stack (the tables of a kernel chunk x cells x cells, float64) the ``matrix`` method builds."""


def sample_correlations(
    values: np.ndarray,
    cell: np.ndarray,
    target: np.ndarray,
    group: np.ndarray,
    group_weights: np.ndarray,
    corr_types=CORR_TYPES,
    tie_ulps: int = 0,
    method: str = "auto",
    pearson_values: np.ndarray | None = None,
    kendall_alphas: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Exact scipy correlations between a measure given per cell and a target given per sample.

    ``values`` (A, C): the measure in each of C cells for A parameter values; ``cell`` (n,) the
    cell of each sample; ``target`` (n,) its target (float); ``group`` (n,) an index into the
    columns of ``group_weights`` (T, Q): sample i enters table t group_weights[t, group[i]] times
    (non-negative integers, less than 2^30 samples per table, else ValueError); the samples may
    use few of the Q columns, the kernel reads only those (never copying float64 or int16
    ``group_weights``; in Fortran order each column is contiguous). Returns,
    per correlation type, an array (T, A): the correlation of the sample arrays each table
    expands to, as scipy defines it (NaN when fewer than 2 samples or either side is constant).
    Target ties are equal float64 values (anchor them first with
    :func:`~retrieval_response.analysis.correlations.tie_anchors` for a tolerance); measure values are
    anchored with ``tie_ulps`` (same function) as in :func:`~retrieval_response.analysis.correlations.table_correlations`.
    ``method``: how Kendall's S is counted (module docstring), ``"auto"`` the cheaper one.
    ``kendall_alphas`` (A,) bool: the alphas at which Kendall's S, the costly part, is counted;
    elsewhere both taus are NaN. Default: every alpha when ``corr_types`` has a Kendall type, else none.
    ``pearson_values`` (A, C): what Pearson's r is computed from, as in
    :func:`~retrieval_response.analysis.correlations.table_correlations`. Pearson's sums are taken on
    :func:`~retrieval_response.analysis.correlations.unit_scaled` values and targets (right for any
    finite values); the target's ranks and ties on the targets as given.
    """
    for corr_type in corr_types:
        if corr_type not in CORR_TYPES:
            raise ValueError(f"correlation type {corr_type!r}: expected one of {CORR_TYPES}")
    order, sorted_values = sorted_tie_anchors(np.atleast_2d(np.asarray(values, np.float64)), tie_ulps)
    values = np.empty_like(sorted_values)
    np.put_along_axis(values, order, sorted_values, axis=-1)
    pearson_values = unit_scaled(values if pearson_values is None else np.broadcast_to(
        np.asarray(pearson_values, np.float64), values.shape))
    by_target = np.argsort(np.asarray(target, np.float64), kind="stable")
    target = np.ascontiguousarray(np.asarray(target, np.float64)[by_target])
    block_start = np.r_[np.flatnonzero(np.r_[True, target[1:] != target[:-1]]), len(target)].astype(np.int64)
    weights = np.asarray(group_weights)
    if weights.dtype != np.int16:  # compact multiplicities (the bootstrap's) are read as they are
        weights = weights.astype(np.float64, copy=False)
    weights = weights.T  # (Q, T): contiguous when group_weights is in Fortran order
    n_tables, (n_alphas, n_cells), n = weights.shape[1], values.shape, len(target)
    if kendall_alphas is None:
        kendall_alphas = np.full(n_alphas, any(corr_type in KENDALL_TYPES for corr_type in corr_types))
    kendall_alphas = np.ascontiguousarray(np.broadcast_to(np.asarray(kendall_alphas, np.bool_), n_alphas))
    use_matrix = _use_matrix(method, n_tables, int(kendall_alphas.sum()), n_cells, n)
    out = np.empty((len(CORR_TYPES), n_tables, n_alphas))
    _correlate_samples(
        values, sorted_values, order, pearson_values, block_start, np.ascontiguousarray(np.asarray(cell, np.int64)[by_target]),
        unit_scaled(target), np.ascontiguousarray(np.asarray(group, np.int64)[by_target]), weights, use_matrix,
        kendall_alphas, out,
    )
    return {corr_type: out[CORR_TYPES.index(corr_type)] for corr_type in corr_types}


def _use_matrix(method: str, n_tables: int, n_alphas: int, n_cells: int, n_samples: int) -> bool:
    """``matrix`` when asked, or for ``auto`` when the sweeps cost more and the matrices fit."""
    if method not in ("auto", "matrix", "sweep"):
        raise ValueError(f"method {method!r}: expected 'auto', 'matrix' or 'sweep'")
    if method != "auto":
        return method == "matrix"
    fits = min(n_tables, SAMPLE_CHUNK) * n_cells * n_cells * 8 <= MATRIX_BYTES
    sweep_cost = n_alphas * n_samples * np.log2(n_cells + 2)
    return fits and sweep_cost > n_samples * n_cells + n_alphas * n_cells
