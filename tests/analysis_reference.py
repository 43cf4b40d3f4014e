"""Straightforward references for the analysis tests: per-sample arrays and scipy, no count tables."""

from __future__ import annotations

import numpy as np

from retrieval_response.correlations import MAX_TOLERANCE, sample_correlation

EPS = np.finfo(np.float64).eps


def anchor_reference(values: np.ndarray, ulps: int = 4) -> np.ndarray:
    """Each value replaced by the first value of its tie group, per row, written with Python loops.

    Walk the distinct values in ascending order; a value within ulps * eps * max(|anchor|, |v|)
    of the open group's first value (the anchor) joins it, any other opens a new group.
    """
    values = np.atleast_2d(np.asarray(values, np.float64))
    out = np.empty_like(values)
    for a, row in enumerate(values):
        mapping, anchor = {}, None
        for v in sorted(set(row.tolist())):
            if anchor is None or v - anchor > ulps * EPS * max(abs(anchor), abs(v)):
                anchor = v
            mapping[v] = anchor
        out[a] = [mapping[v] for v in row.tolist()]
    return out


def scipy_curves(values: np.ndarray, target: np.ndarray, corr_types) -> dict[str, np.ndarray]:
    """corr type -> (A,) scipy correlation of each row of ``values`` (A, n) with ``target`` (n,)."""
    return {t: np.array([sample_correlation(v, target, t) for v in np.atleast_2d(values)]) for t in corr_types}


def reference_first_max(curve: np.ndarray) -> tuple[float, int]:
    """Maximum of a curve and the first index within MAX_TOLERANCE of it."""
    best = np.nanmax(curve)
    return best, int(np.flatnonzero(curve >= best - MAX_TOLERANCE)[0])
