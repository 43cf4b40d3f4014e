"""Bootstrap over query ids: graded samples of one query are not independent (docs/METHODS.md#bootstrap).

A resample draws, within each stratum (subset), as many query ids as the stratum has, with
replacement; every graded sample of a drawn query enters with the query's multiplicity. The
same draw serves every measure and segment (paired differences). With the count
representation a resample is just re-weighted cell x grade counts.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def resample_weights(strata: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, Q) multiplicities of Q query ids: a multinomial draw within each stratum.

    Row r is how many times each query was drawn in resample r; each stratum's row sum equals
    its number of queries. Reproducible for a given seed and strata order.
    """
    strata = np.asarray(strata)
    rng = np.random.default_rng(seed)
    weights = np.zeros((n_resamples, len(strata)), dtype=np.float64)
    for stratum in np.unique(strata):
        members = np.flatnonzero(strata == stratum)
        weights[:, members] = rng.multinomial(len(members), np.full(len(members), 1.0 / len(members)), size=n_resamples)
    return weights


def resampled_tables(
    weights: np.ndarray, query: np.ndarray, cell: np.ndarray, grade: np.ndarray, n_cells: int, n_grades: int
) -> np.ndarray:
    """(R, n_cells, n_grades) counts: table_r[c, g] = sum of weights[r, query[i]] over samples i in (c, g).

    ``query``, ``cell``, ``grade`` are per-sample integer indexes (query into the columns of
    ``weights``). Computed as one sparse product, cost R x (distinct query-cell-grade triples).
    """
    per_query = sparse.csr_matrix(
        (np.ones(len(query)), (query, cell * n_grades + grade)), shape=(weights.shape[1], n_cells * n_grades)
    )
    per_query.sum_duplicates()
    return np.asarray(per_query.T @ weights.T).T.reshape(weights.shape[0], n_cells, n_grades)


def percentile_interval(samples: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval over the last axis, ignoring NaN resamples: ((1-level)/2, (1+level)/2) quantiles.

    Each quantile is numpy's ``nanquantile`` (method "linear"), computed for all rows at once
    (:func:`_linear_quantile`); NaN where a row has no value.
    """
    samples = np.asarray(samples, np.float64)
    low = np.full(samples.shape[:-1], np.nan)
    high = np.full(samples.shape[:-1], np.nan)
    finite = ~np.isnan(samples).all(axis=-1)
    if finite.any():
        rows = samples[finite]
        ordered = np.sort(rows, axis=-1)
        count = np.count_nonzero(~np.isnan(rows), axis=-1)
        low[finite] = _linear_quantile(ordered, count, (1 - level) / 2)
        high[finite] = _linear_quantile(ordered, count, (1 + level) / 2)
    return low, high


def _linear_quantile(ordered: np.ndarray, count: np.ndarray, q: float) -> np.ndarray:
    """Quantile ``q`` of each row of ``ordered`` (m, R): ascending, its ``count`` (m,) >= 1 values first, NaN after.

    numpy's "linear" method, operation for operation: v = (n - 1) q, i = floor(v), a, b the
    values at i and i + 1 (both the largest when v >= n - 1, with gamma = v + 1), gamma = v - i,
    a + (b - a) gamma, or b - (b - a)(1 - gamma) where gamma >= 0.5.
    """
    virtual = (count - 1) * np.float64(q)
    previous = np.floor(virtual)
    above = virtual >= count - 1
    lower = np.where(above, count - 1, previous).astype(np.intp)
    upper = np.where(above, count - 1, previous + 1).astype(np.intp)
    gamma = virtual - np.where(above, -1.0, previous)
    a = np.take_along_axis(ordered, lower[:, None], axis=-1)[:, 0]
    b = np.take_along_axis(ordered, upper[:, None], axis=-1)[:, 0]
    diff = b - a
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)


def share_positive(differences: np.ndarray) -> np.ndarray:
    """Share of resamples (with a defined difference) in which the difference is > 0; NaN if none."""
    differences = np.asarray(differences, np.float64)
    defined = ~np.isnan(differences)
    n = defined.sum(axis=-1)
    with np.errstate(invalid="ignore"):
        return np.where(n > 0, (defined & (differences > 0)).sum(axis=-1) / np.maximum(n, 1), np.nan)


SPREAD_FLOOR = 1e-12
"""A statistic whose resampled values spread by no more than this (sd) has no spread (rounding only)."""


def max_t(values: np.ndarray, draws: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, float]:
    """Single-step max-t over a family of statistics (Romano and Wolf 2005): ``values`` (m,) and
    their bootstrap ``draws`` (m, R) on the same resamples.

    se_k = sd_r(draws_k); T_r = max over k of |draws_k,r - values_k| / se_k (statistics undefined
    on a resample skip it there). Returns ``p`` (m,), p_k = (1 + #{r: T_r >= |values_k| / se_k}) /
    (1 + R'), R' the resamples with a defined T; ``half`` (m,) = c se_k, with c the ``level``
    quantile of T, the half-width of simultaneous intervals values_k +- half_k; and c. The
    family-wise error of the claims values_k != 0 with p_k < 1 - level is at most 1 - level
    (asymptotically), whichever statistics are null. A statistic without a finite, positive se
    (undefined draws, or the same value on every resample: sd <= :data:`SPREAD_FLOOR`) cannot be
    tested: p = 1, half NaN.
    """
    values = np.asarray(values, np.float64)
    draws = np.asarray(draws, np.float64).reshape(len(values), -1)
    m = len(values)
    if m == 0 or draws.shape[1] == 0:
        return np.ones(m), np.full(m, np.nan), float("nan")
    se = np.full(m, np.nan)
    spread = np.count_nonzero(~np.isnan(draws), axis=1) > 1  # nanstd warns on fewer than 2 values
    if spread.any():
        with np.errstate(invalid="ignore"):
            se[spread] = np.nanstd(draws[spread], axis=1, ddof=1)
    usable = np.isfinite(se) & (se > SPREAD_FLOOR) & np.isfinite(values)
    if usable.any():
        centred = np.abs(draws[usable] - values[usable, None]) / se[usable, None]
        stat = np.max(np.where(np.isnan(centred), -np.inf, centred), axis=0)
        stat = stat[np.isfinite(stat)]
    else:
        stat = np.zeros(0)
    critical = float(np.quantile(stat, level)) if stat.size else float("nan")
    t = np.abs(values) / np.where(usable, se, 1.0)
    p = np.where(usable, (1.0 + (stat[None, :] >= t[:, None]).sum(axis=1)) / (1.0 + stat.size), 1.0)
    half = np.where(usable, critical * np.where(usable, se, 0.0), np.nan)
    return p, half, critical
