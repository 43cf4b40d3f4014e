"""Straightforward references for the analysis tests: per-sample arrays and scipy, no count tables."""

from __future__ import annotations

import numpy as np

from retrieval_response.analysis.correlations import MAX_TOLERANCE, sample_correlation

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


def random_graded(seed: int, n_queries: int = 60, embedders=("E1", "E2"), subsets=("A", "M")):
    """A random graded table in the analysis layout: id, E, Nc, Np, K, inK, grade.

    Per query and embedder one ranked sample (Np 2..6, Nc = Np + 2..6 candidates in random order)
    graded at a random subset of K in 1..Nc, so that some K have a 2K partner and some do not;
    the grade rises with the positives retrieved, plus noise; a few grades are null.
    """
    import polars as pl

    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        query_id = f"{subsets[q % len(subsets)]}-{q}"
        n_positive = int(rng.integers(2, 7))
        n_candidates = n_positive + int(rng.integers(2, 7))
        for embedder in embedders:
            order = rng.permutation(n_candidates)
            ks = sorted(rng.choice(np.arange(1, n_candidates + 1), size=int(rng.integers(2, n_candidates + 1)), replace=False))
            for k in ks:
                inK = [int(i < n_positive) for i in order[:k]]
                grade = int(np.clip(np.rint(1 + 3 * sum(inK) / n_positive + rng.normal(0, 0.8)), 1, 5))
                rows.append({"id": query_id, "E": embedder, "Nc": n_candidates, "Np": n_positive, "K": int(k),
                             "inK": inK, "grade": None if rng.random() < 0.03 else grade})
    return pl.DataFrame(rows, schema_overrides={"inK": pl.List(pl.Int8), "grade": pl.Int8})
