"""The exact forms of the measures with alpha: their formulas in double-double arithmetic, for exact
mode's ties and order and Pearson's input. Every measure with alpha carries one (:class:`ExactForm`,
``Measure.exact``); the registry refuses a measure with alpha without one.

Ties: float64 values of cells that are equal in exact arithmetic can differ by a few units in
the last place, and values that are distinct can be closer than that (the paper's epsilon in
F_e_partner, an alpha just off a point where two cells cross). Evaluated as unevaluated sums
hi + lo, the values are accurate to about eps^2, far below the smallest gap between distinct
values of small-integer cells, so equal and distinct are told apart (:meth:`ExactForm.values`).

Pearson: r is invariant under a shift of the measure, but float64 values carry an absolute
rounding error of about eps * |x|: where a measure varies by a relative spread s over a segment
(s ~ 1e-8 at the ends of the paper's grid, when the segment's cells share n_p/K or n_p/Np), r
computed from them is off by about eps / s. In double-double the differences of the values
from one reference value are accurate float64 numbers whatever the spread: the input Pearson
needs.

Error-free transformations: Knuth's two-sum and Dekker's split and two-product. Each form
evaluates its measures' formula (stated in the measure's docstring) operation by operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

_SPLITTER = 134217729.0  # 2^27 + 1
_jit = numba.njit(cache=True, error_model="numpy")  # scalar arithmetic, IEEE division (x/0 = inf or NaN, no exception)


@_jit
def _two_sum(a, b):
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


@_jit
def _fast_two_sum(a, b):
    s = a + b
    return s, b - (s - a)


@_jit
def _split(a):
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


@_jit
def _two_product(a, b):
    p = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    return p, ((a_high * b_high - p) + a_high * b_low + a_low * b_high) + a_low * b_low


@_jit
def _two_product_count(a, k):
    """a*k = p + e exactly for an integer-valued k below 2^26 (Dekker's product with k's low half 0)."""
    p = a * k
    a_high, a_low = _split(a)
    return p, (a_high * k - p) + a_low * k


@_jit
def _add(x, y):
    s, e = _two_sum(x[0], y[0])
    return _fast_two_sum(s, e + x[1] + y[1])


@_jit
def _times_count(x, k):
    p, e = _two_product_count(x[0], k)
    return _fast_two_sum(p, e + x[1] * k)


@_jit
def _times_float(x, b):
    p, e = _two_product(x[0], b)
    return _fast_two_sum(p, e + x[1] * b)


@_jit
def _divide(x, y):
    q = x[0] / y[0]
    p, e = _two_product(q, y[0])
    remainder = ((x[0] - p) - e + x[1]) - q * y[1]
    return _fast_two_sum(q, remainder / y[0])


@_jit
def _divide_counts(n, k):
    """n / k as (hi, lo) for integer-valued n, k below 2^26."""
    q = n / k
    p, e = _two_product_count(q, k)
    return _fast_two_sum(q, ((n - p) - e) / k)


@_jit
def _one_minus(alpha):
    return _two_sum(1.0, -alpha)


@_jit
def _harmonic(n_p, K, D, alpha):
    """n_p / (a*K + (1-a)*D) as (hi, lo), 0 where n_p = 0."""
    denominator = _add(_two_product_count(alpha, K), _times_count(_one_minus(alpha), D))
    if n_p > 0:
        return _divide((n_p, 0.0), denominator)
    return _divide((n_p, 0.0), (1.0, 0.0))


@_jit
def _trade_off(n_p, K, alpha):
    """(1-a)*n_p - a*((K - n_p)/K) as (hi, lo)."""
    term = _times_float(_divide_counts(K - n_p, K), alpha)
    return _add(_times_count(_one_minus(alpha), n_p), (-term[0], -term[1]))


@_jit
def _trade_off_unnormalised(n_p, K, alpha):
    """(1-a)*n_p - a*(K - n_p) as (hi, lo)."""
    term = _two_product_count(alpha, K - n_p)
    return _add(_times_count(_one_minus(alpha), n_p), (-term[0], -term[1]))


_HARMONIC, _TRADE_OFF, _TRADE_OFF_UNNORMALISED = 0, 1, 2
"""Codes of the double-double formulas for :func:`_evaluate`."""


@_jit
def _evaluate(kind, counts, alpha, high, low):
    """high[a, c] + low[a, c] = formula ``kind`` at alpha[a] on the counts counts[:, c] (float64, in the
    entry's feature order), each element by the same operations as the scalar functions above."""
    for a in range(alpha.shape[0]):
        for c in range(counts.shape[1]):
            if kind == _HARMONIC:
                value = _harmonic(counts[0, c], counts[1, c], counts[2, c], alpha[a])
            elif kind == _TRADE_OFF:
                value = _trade_off(counts[0, c], counts[1, c], alpha[a])
            else:
                value = _trade_off_unnormalised(counts[0, c], counts[1, c], alpha[a])
            high[a, c], low[a, c] = value


MAX_COUNT = 2**26
"""Counts (n_p, K, Np, ...) below this are exact halves of a Dekker split; larger ones fall back to float64."""
TIE_RELATIVE = 2.0**-90
"""Two double-double values tie when they differ by at most this, relative to the larger."""


@dataclass(frozen=True)
class ExactForm:
    """A formula with alpha in double-double arithmetic, over ``arity`` integer counts in the order
    of its measure's ``features``: ``scale_free`` when its value depends only on the ratios of the
    counts (they are reduced by their gcd first)."""

    name: str
    code: int
    arity: int
    scale_free: bool

    def values(self, counts: Sequence[np.ndarray], alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(tie-group ranks, centred values), both (A, C), of the form on the cells' counts
        (``counts[i][c]``: the i-th count of cell c) per alpha; None when a count is negative or
        not below :data:`MAX_COUNT` (the measure's float64 values and the ulp rule then decide).

        ranks[a, c] = the rank (0, 1, ...) of cell c's tie group in ascending order of the value:
        equal ranks exactly where the values are equal in exact arithmetic at the float alpha. The
        double-double values are within about 2^-99 (relative) of the exact ones, while distinct
        exact values of cells with counts below 2^10 differ by more than about 2^-70 at any alpha
        of at least 2^-40 (or 0, or 1); the tolerance :data:`TIE_RELATIVE` lies between the two.
        Scale-free forms reduce each cell's counts by their gcd first, so cells that are multiples
        of one another get identical inputs. centred[a, c] = value of cell c minus value of cell 0,
        accurate to about eps of the difference (Pearson's input).
        """
        counts = [np.asarray(c, np.int64) for c in counts]
        if any(c.size and (c.min() < 0 or c.max() >= MAX_COUNT) for c in counts):
            return None
        if self.scale_free and counts[0].size:
            divisor = np.maximum(np.gcd.reduce(np.stack(counts), axis=0), 1)
            counts = [c // divisor for c in counts]
        a = np.ascontiguousarray(alpha, np.float64).reshape(-1)
        shape = (len(a), len(counts[0]))
        high, low = np.empty(shape), np.empty(shape)
        _evaluate(self.code, np.stack(counts).astype(np.float64), a, high, low)
        if shape[1] == 0:
            return np.zeros(shape), np.zeros(shape)
        order = np.argsort(high, axis=-1, kind="stable")
        sorted_high, sorted_low = np.take_along_axis(high, order, -1), np.take_along_axis(low, order, -1)
        unsorted = (sorted_high[:, 1:] == sorted_high[:, :-1]) & (sorted_low[:, 1:] < sorted_low[:, :-1])
        for row in np.flatnonzero(unsorted.any(axis=-1)):  # equal hi, lo out of order: rare
            order[row] = np.lexsort((low[row], high[row]))
            sorted_high[row], sorted_low[row] = high[row, order[row]], low[row, order[row]]
        step = (sorted_high[:, 1:] - sorted_high[:, :-1]) + (sorted_low[:, 1:] - sorted_low[:, :-1])
        scale = np.maximum(np.abs(sorted_high[:, 1:]), np.abs(sorted_high[:, :-1]))
        group = np.concatenate([np.zeros((shape[0], 1)), np.cumsum(~(step <= TIE_RELATIVE * scale), axis=-1)], axis=-1)
        ranks = np.empty(shape)
        np.put_along_axis(ranks, order, group, axis=-1)
        return ranks, (high - high[:, :1]) + (low - low[:, :1])


HARMONIC = ExactForm("harmonic", _HARMONIC, 3, scale_free=True)
"""The exact form of F, F_e and F_e_partner, counts (n_p, K, D) (:func:`_harmonic`)."""
TRADE_OFF = ExactForm("trade-off", _TRADE_OFF, 2, scale_free=False)
"""The exact form of T and T_umbrela, counts (n_p, K) (:func:`_trade_off`)."""
TRADE_OFF_UNNORMALISED = ExactForm("unnormalised trade-off", _TRADE_OFF_UNNORMALISED, 2, scale_free=False)
"""The exact form of T_u, counts (n_p, K) (:func:`_trade_off_unnormalised`)."""
