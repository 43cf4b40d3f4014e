"""Simultaneous comparisons of a family's correlations from their bootstrap draws over queries.

:func:`best_comparisons` is the verdict's: Hsu's multiple comparisons with the best (MCB; Hsu
1984, "Constrained simultaneous confidence intervals for multiple comparisons with the best",
Annals of Statistics 12(3); Hsu 1996, *Multiple Comparisons*, ch. 4), its critical value taken
from the bootstrap distribution of the studentized differences (a max-t construction, Romano and
Wolf 2005) instead of the normal theory's. :func:`all_pairs` is the all-pairs comparison the verdict
used before (Tukey-type intervals from the same max-t), kept for the benchmarks that compare the two.

Notation: m measures, r_i the correlation of measure i, r*_{i,b} its value on resample b
(b = 1..R, the same query resamples for every measure), d_ij = r_i - r_j, se_ij the standard
deviation of d*_ij over the resamples (ddof 1). A pair whose draws do not spread (se_ij <=
:data:`~retrieval_response.analysis.bootstrap.SPREAD_FLOOR`, or undefined) is never evidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from retrieval_response.analysis.bootstrap import SPREAD_FLOOR, max_t

MC_Z = 1.959963984540054
"""The standard normal quantile of 0.975: the Monte Carlo band of the critical value is 95%."""


@dataclass(frozen=True)
class BestComparisons:
    """What :func:`best_comparisons` returns, each array (m,) in the order of the input.

    ``low``, ``high``: the simultaneous interval of theta_i - max_{j != i} theta_j (constrained
    MCB, so it always holds 0 at one end: ``high`` = 0 says theta_i <= max_{j != i} theta_j, which
    ties satisfy); ``margin`` = -``low`` >= 0, how much the best other measure could beat measure
    i; ``worse``: some other measure is surely, strictly better (:func:`strictly_worse`, ``p`` <
    1 - level); ``p``: its adjusted p-value, a multiple of 1/(1 + R); ``se_margin``: the largest
    se_ij over the j that bound the margin (the power plan scales it); ``critical``: c; ``margin_band``: (m, 2), the margin at the
    lower and upper end of c's Monte Carlo band (:func:`best_comparisons`); ``resamples``: R;
    ``difference`` (m, m): d_ij = r_i - r_j; ``se`` (m, m): se_ij, NaN where untestable."""

    low: np.ndarray
    high: np.ndarray
    margin: np.ndarray
    worse: np.ndarray
    p: np.ndarray
    se_margin: np.ndarray
    critical: float
    margin_band: np.ndarray
    se_error: float
    resamples: int
    difference: np.ndarray
    se: np.ndarray

    def tied_with_smallest(self) -> np.ndarray:
        """Per measure: its margin is the smallest within Monte Carlo error. With s the measure
        of smallest margin: at either end of c's band (``margin_band``), margin_i - margin_s <=
        e c sqrt(2) max(se_margin_i, se_margin_s), e = ``se_error`` the relative error of a
        bootstrap se (two se's, each off by about e). Measures decided worse never are."""
        finite = np.isfinite(self.margin)
        if not finite.any():
            return np.zeros(len(self.margin), bool)
        smallest = int(np.argmin(np.where(finite, self.margin, np.inf)))
        with np.errstate(invalid="ignore"):
            gaps = self.margin_band - self.margin_band[smallest][None, :]
        gaps = np.where(np.isnan(gaps), np.inf, gaps)
        scale = np.fmax(np.nan_to_num(self.se_margin, nan=0.0), np.nan_to_num(self.se_margin[smallest], nan=0.0))
        tolerance = self.se_error * self.critical * math.sqrt(2) * scale
        return ~self.worse & finite & (gaps.min(axis=1) <= tolerance + 1e-12)


def _pair_se(values: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """d (m, m) with d[i, j] = r_i - r_j, its draws (m, m, R), se (m, m), NaN where the pair
    cannot be studentized (no spread, or fewer than two defined draws), and ``flat`` (m, m): the
    pairs whose defined draws do not spread, whose difference is therefore known exactly."""
    d = values[:, None] - values[None, :]
    d_draws = draws[:, None, :] - draws[None, :, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        defined = np.count_nonzero(~np.isnan(d_draws), axis=2)
        se = np.where(defined > 1, np.nanstd(np.where(defined[..., None] > 1, d_draws, 0.0), axis=2, ddof=1), np.nan)
    flat = (defined > 1) & ~(se > SPREAD_FLOOR) & ~np.eye(len(values), dtype=bool)
    se[~(se > SPREAD_FLOOR)] = np.nan
    np.fill_diagonal(se, np.nan)
    return d, d_draws, se, flat


def best_comparisons(values: np.ndarray, draws: np.ndarray, level: float = 0.95) -> BestComparisons:
    """Multiple comparisons with the best over ``values`` (m,) with bootstrap ``draws`` (m, R).

    The critical value: for each i taken as the best, M_{i,b} = max_{j != i} (d*_{ji,b} - d_ji) /
    se_ji, the largest one-sided studentized excess of another measure over i on resample b
    (pairs without se skipped; a resample where every pair of i is undefined skipped); c_i its
    order statistic with p-values consistent to the resample: the (k_i + 1)-th largest of the R_i
    defined M_{i,b}, k_i the largest k with (1 + k) / (1 + R_i) < alpha = 1 - level; c = max_i c_i.
    Whichever measure b is truly best, c >= c_b, so with probability at least ``level``
    (asymptotically) d_jb - (theta_j - theta_b) <= c se_jb for every j at once, the one event
    Hsu's theorem needs: on it every interval below holds.

    With t_ji = d_ji / se_ji and G = {i: t_ji <= c for all j} (the measures that could be best;
    never empty, the highest belongs to it):
      high_i = max(0, min_{j != i} (d_ij + c se_ij)), which is 0 exactly when i is not in G;
      low_i = 0 when G = {i}, else min(0, min_{j in G, j != i} (d_ij - c se_ij)).
    ``high`` = 0 is Hsu's claim theta_i <= max_{j != i} theta_j, true under ties; the strict claim
    that some measure is better (``worse``, ``p``) is :func:`strictly_worse`'s.

    The Monte Carlo band of c: each c_i's rank k_i moved by -+ z sqrt(R_i alpha (1 - alpha))
    (the binomial error of an order statistic), z :data:`MC_Z`, c_i's band the order statistics at
    those ranks, c's band their maxima; ``margin_band`` is each margin recomputed at the band's
    two ends (margins grow with c); ``se_error`` = z / sqrt(2 (R - 1)), the relative Monte Carlo
    error of a bootstrap standard error.
    """
    values = np.asarray(values, np.float64)
    draws = np.asarray(draws, np.float64).reshape(len(values), -1)
    m, resamples = draws.shape
    alpha = 1 - level
    d, d_draws, se, flat = _pair_se(values, draws)
    # excess[i, j, b]: how far d*_{ji} exceeds d_ji, studentized (j over i)
    with np.errstate(invalid="ignore"):
        excess = (-(d_draws - d[:, :, None])) / se[:, :, None]
    excess = np.where(np.isnan(excess), -np.inf, excess)
    stat = excess.max(axis=1) if m > 1 else np.full((m, resamples), -np.inf)
    defined = np.isfinite(stat)
    count = defined.sum(axis=1)
    ordered = -np.sort(-np.where(defined, stat, -np.inf), axis=1)  # descending, undefined last
    k = np.ceil(alpha * (1 + count)).astype(np.int64) - 2  # the largest k with (1 + k) / (1 + count) < alpha
    spread = MC_Z * np.sqrt(count * alpha * (1 - alpha))

    def order_statistic(rank: np.ndarray) -> np.ndarray:
        usable = (rank >= 0) & (count > 0)
        picked = np.take_along_axis(ordered, np.clip(rank, 0, max(resamples - 1, 0))[:, None], axis=1)[:, 0]
        # no usable rank: nothing can be declared (c infinite); rank beyond the defined draws: the smallest
        picked = np.where(rank >= count, np.take_along_axis(ordered, np.maximum(count - 1, 0)[:, None], 1)[:, 0],
                          picked)
        return np.where(usable, picked, np.inf)

    usable_rows = count > 0

    def c_at(rank: np.ndarray) -> float:
        """c at the order-statistic ranks ``rank``: the largest c_i over the rows with draws."""
        return float(np.max(order_statistic(rank)[usable_rows])) if usable_rows.any() else math.inf

    critical = max(c_at(k), 0.0)
    se_error = MC_Z / math.sqrt(2 * (resamples - 1)) if resamples > 1 else math.inf
    c_low = max(c_at(np.ceil(k + spread).astype(np.int64)), 0.0)
    c_high = c_at(np.floor(k - spread).astype(np.int64))
    low, high, margin, se_margin = _bounds(d, se, flat, critical)
    band = np.stack([_bounds(d, se, flat, c_low)[2], _bounds(d, se, flat, c_high)[2]], axis=1)
    p = strictly_worse(d, d_draws, se)
    worse = p < alpha
    return BestComparisons(low=low, high=high, margin=margin, worse=worse, p=p, se_margin=se_margin,
                           critical=critical, margin_band=band, se_error=se_error, resamples=resamples,
                           difference=d, se=se)


def strictly_worse(d: np.ndarray, d_draws: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Per measure i, the adjusted p-value of "some measure j is strictly better than i": the
    smallest over j of the step-down max-t adjusted p-values of the one-sided hypotheses
    theta_j <= theta_i over every ordered pair (Romano and Wolf 2005, Algorithm 4.1, with
    studentized bootstrap statistics). With t_ji = d_ji / se_ji ordered from the largest, and
    T*_{(k),b} = max over the pairs ranked k or later of (d*_{ji,b} - d_ji) / se_ji (undefined draws
    skipped): p_(k) = (1 + #{b: T*_{(k),b} >= t_(k)}) / (1 + R_k), made monotone by a running
    maximum. Rejecting where it is below alpha controls the family-wise error of the strict claims
    at alpha (asymptotically), the complete null of equal correlations included, where the first
    step is the max over all ordered pairs. 1 where no pair of i can be tested."""
    m = len(d)
    j_index, i_index = np.nonzero(~np.eye(m, dtype=bool) & ~np.isnan(se))
    p = np.ones(m)
    if j_index.size == 0:
        return p
    t = d[j_index, i_index] / se[j_index, i_index]
    with np.errstate(invalid="ignore"):
        stats = (d_draws[j_index, i_index] - d[j_index, i_index, None]) / se[j_index, i_index, None]
    stats = np.where(np.isnan(stats), -np.inf, stats)
    order = np.argsort(-t, kind="stable")
    suffix = np.maximum.accumulate(stats[order][::-1], axis=0)[::-1]
    defined = np.isfinite(suffix).sum(axis=1)
    single = (1.0 + (suffix >= t[order][:, None]).sum(axis=1)) / (1.0 + defined)
    single = np.where(defined > 0, single, 1.0)
    adjusted = np.maximum.accumulate(single)
    np.minimum.at(p, i_index[order], adjusted)
    return p


def _bounds(d: np.ndarray, se: np.ndarray, flat: np.ndarray, critical: float):
    """Constrained MCB bounds at critical value ``critical`` (:func:`best_comparisons`):
    low, high, margin, worse and the largest se_ij over the j in G bounding each margin. A pair
    whose draws do not spread (``flat``) bounds with its difference alone (width 0); a pair
    without defined draws bounds nothing."""
    m = len(d)
    testable = ~np.isnan(se)
    bounded = testable | flat
    with np.errstate(invalid="ignore"):
        width = np.where(testable, critical * np.where(testable, se, 1.0), 0.0)
    worse = ((d.T > width.T) & testable.T).any(axis=1) if m > 1 else np.zeros(m, bool)
    upper = np.where(np.eye(m, dtype=bool), np.inf, d + np.where(bounded, width, np.inf))
    high = np.maximum(upper.min(axis=1), 0.0) if m > 1 else np.zeros(m)
    high[worse] = 0.0
    possible = ~worse
    others = possible[None, :] & ~np.eye(m, dtype=bool)
    lower = np.where(others, d - np.where(bounded, width, np.inf), np.inf)
    alone = possible & (possible.sum() == 1)
    low = np.where(alone, 0.0, np.minimum(lower.min(axis=1), 0.0))
    margin = -low
    with np.errstate(invalid="ignore"):
        se_margin = np.where(others & testable, se, -np.inf).max(axis=1)
    se_margin = np.where(np.isfinite(se_margin), se_margin, np.nan)
    return low, high, margin + 0.0, se_margin


def all_pairs(values: np.ndarray, draws: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, float]:
    """Every pair (i < j) compared by single-step max-t
    (:func:`~retrieval_response.analysis.bootstrap.max_t`, Romano and Wolf 2005) on the paired
    differences d_ij and their draws. Returns ``p`` and ``half`` as symmetric (m, m) matrices
    (diagonal p = 1, half = 0) and the critical value; d_ij +- half_ij hold simultaneously over
    all pairs at ``level``."""
    m = len(values)
    p, half = np.ones((m, m)), np.zeros((m, m))
    if m < 2:
        return p, half, math.nan
    i, j = np.triu_indices(m, 1)
    p_pairs, half_pairs, critical = max_t(values[i] - values[j], draws[i] - draws[j], level)
    p[i, j] = p[j, i] = p_pairs
    half[i, j] = half[j, i] = half_pairs
    return p, half, critical


def all_pairs_margins(values: np.ndarray, half: np.ndarray) -> np.ndarray:
    """The margins all-pairs intervals give: max(0, max_{j != i} (r_j - r_i + half_ij)), an upper
    bound on max_{j != i} theta_j - theta_i at the same level (NaN half: no bound, infinite)."""
    values = np.asarray(values, np.float64)
    bound = values[None, :] - values[:, None] + np.where(np.isnan(half), np.inf, half)
    np.fill_diagonal(bound, -np.inf)
    return np.maximum(bound.max(axis=1), 0.0) if len(values) > 1 else np.zeros(len(values))
