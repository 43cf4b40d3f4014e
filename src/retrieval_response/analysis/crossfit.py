"""Cross-fitted correlation of a measure with a free parameter (docs/METHODS.md#cross-fitting).

The max-over-alpha correlation picks alpha on the data it reports on, an optimistic figure.
The cross-fitted figure splits the query ids into two halves, picks alpha on one half (the
first alpha reaching the maximum, as for the paper's figure), measures the correlation at that
alpha on the other half, does the reverse, and averages the two held-out correlations.
"""

from __future__ import annotations

import hashlib

import numpy as np

from retrieval_response.analysis.correlations import first_max


def query_halves(ids: np.ndarray, strata: np.ndarray, seed: int) -> np.ndarray:
    """For each distinct query id, True when it falls in half A.

    Ids are ordered within their stratum (e.g. subset) by blake2b(f"{seed}:{id}") and assigned to
    A and B alternately, so each stratum splits into halves differing by at most one id; the
    split depends only on the seed and the ids, not on their order in the table.
    """
    ids = np.asarray(ids, dtype=object)
    keys = np.array([hashlib.blake2b(f"{seed}:{i}".encode(), digest_size=8).hexdigest() for i in ids])
    strata = np.asarray(strata, dtype=object).astype(str)
    order = np.lexsort((keys, strata))
    sorted_strata = strata[order]
    stratum_start = np.r_[True, sorted_strata[1:] != sorted_strata[:-1]]
    position = np.arange(len(ids)) - np.maximum.accumulate(np.where(stratum_start, np.arange(len(ids)), 0))
    half_a = np.empty(len(ids), dtype=bool)
    half_a[order] = position % 2 == 0
    return half_a


def crossfit(curve_a: np.ndarray, curve_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cross-fitted correlation from the correlation curves (..., A) of the two halves.

    value = (curve_b[argmax_first(curve_a)] + curve_a[argmax_first(curve_b)]) / 2; NaN when either
    half has no defined correlation. Returns (value, alpha index chosen on A, on B); -1 = none.
    """
    _, index_a = first_max(curve_a)
    _, index_b = first_max(curve_b)
    held_out_b = np.take_along_axis(curve_b, np.maximum(index_a, 0)[..., None], axis=-1)[..., 0]
    held_out_a = np.take_along_axis(curve_a, np.maximum(index_b, 0)[..., None], axis=-1)[..., 0]
    value = np.where((index_a >= 0) & (index_b >= 0), (held_out_a + held_out_b) / 2.0, np.nan)
    return value, index_a, index_b
