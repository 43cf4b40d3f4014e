"""The formulas of the rank-based retrieval measures of one graded sample, vectorised over samples
and alphas (docs/METHODS.md#measures): F, F_e, F_e_partner, T, T_u, the paper's nDCG, nDCG@K, RR@K
and AP@K.

Notation, per graded sample: ``inK`` the 0/1 relevance of the top-K ranked items, n_p = sum(inK)
(positives in the top K), n_n = K - n_p, Np the total number of positives, and
np_2K the number of positives in the top 2K of the same ranked sample.

Every measure with a parameter takes ``alpha`` as a 1-d array and returns an array of shape
(len(alpha), n_samples); the others return shape (n_samples,). All arithmetic is float64 and
elementwise, so a measure evaluated on distinct feature combinations ("cells") gives
bit-identical values to the same measure evaluated sample by sample: ties are the same.

Order of operations (``compat``): floating-point rounding depends on it, and rounding decides
which samples tie. Every formula is evaluated in the order in which it is written in its
docstring, which is the paper's order, except T: ``compat="exact"`` (the default) computes
a*(n_n/K), so samples with the same n_n/K (every sample with n_p = 0 has n_n/K = 1) get
bit-identical values, the mathematically right ties; ``compat="paper"`` computes (a*n_n)/K as
the paper's code does, which can split such samples by one unit in the last place. F_e_partner
adds the paper's 1e-10 to n_p' in ``"paper"`` mode only. Use ``"paper"`` to reproduce
published numbers exactly.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from retrieval_response.measures.ranked_lists import dcg, flatten, ideal_dcg

PARTNER_EPSILON = 1e-10
"""Added to the partner's positives in ``F_e_partner`` in paper mode, as in the paper's code."""

COMPAT_MODES = ("exact", "paper")
"""Floating-point order of the formulas: the mathematically exact ties, or the paper's code."""


def _column(alpha: np.ndarray) -> np.ndarray:
    return np.asarray(alpha, dtype=np.float64)[:, None]


def f_measure(n_p: np.ndarray, K: np.ndarray, Np: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """F(a) = n_p / (a*K + (1-a)*Np): the weighted harmonic mean of P and R (1/(a/P + (1-a)/R))."""
    a = _column(alpha)
    return np.asarray(n_p, np.float64) / (a * np.asarray(K, np.float64) + (1.0 - a) * np.asarray(Np, np.float64))


def f_estimated(n_p: np.ndarray, K: np.ndarray, np_2K: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """F_e(a) = n_p / (a*K + (1-a)*np_2K), np_2K = positives in the top min(2K, Nc) of the ranking.

    0 when n_p = 0 (then np_2K may be 0 too and the ratio would be 0/0 at a = 0).
    """
    a = _column(alpha)
    n = np.asarray(n_p, np.float64)
    denominator = a * np.asarray(K, np.float64) + (1.0 - a) * np.asarray(np_2K, np.float64)
    return np.divide(n, denominator, out=np.zeros(np.broadcast_shapes(n.shape, denominator.shape)), where=n > 0)


def f_estimated_partner(
    n_p: np.ndarray, K: np.ndarray, np_partner: np.ndarray, alpha: np.ndarray, compat: str = "exact"
) -> np.ndarray:
    """F_e_partner(a) = n_p / (a*K + (1-a)*n_p'), n_p' = n_p of the graded sample of the same (id, E, Nc, Np) with K' = round(2K).

    ``compat="paper"``: n_p / (a*K + (1-a)*(n_p' + 1e-10)), the paper's code (1e-10 added to
    n_p'). ``compat="exact"``: the limit epsilon -> 0, the epsilon being only a guard for the
    0/0 at a = 0 when n_p' = 0 (then n_p = 0): 0 where n_p = 0, as :func:`f_estimated`. Samples
    with the same (n_p, K, n_p') up to a common factor then tie, as they do in F; with the
    epsilon they differ by about (1-a) * 1e-10 / K relative, less than 4 ulps near a = 1.
    Samples without a partner have no value (see :func:`partner_positives`).
    """
    if compat == "exact":
        return f_estimated(n_p, K, np_partner, alpha)
    if compat == "paper":
        a = _column(alpha)
        partner = np.asarray(np_partner, np.float64) + PARTNER_EPSILON
        return np.asarray(n_p, np.float64) / (a * np.asarray(K, np.float64) + (1.0 - a) * partner)
    raise ValueError(f"compat {compat!r}: expected one of {COMPAT_MODES}")


def t_measure(n_p: np.ndarray, K: np.ndarray, alpha: np.ndarray, compat: str = "exact") -> np.ndarray:
    """T(a) = (1-a)*n_p - a*n_n/K, with n_n = K - n_p (the paper's measure without Np).

    ``compat="exact"``: (1-a)*n_p - a*(n_n/K), equal n_n/K give bit-identical values;
    ``compat="paper"``: (1-a)*n_p - (a*n_n)/K, the paper's order of operations.
    """
    a = _column(alpha)
    n = np.asarray(n_p, np.float64)
    k = np.asarray(K, np.float64)
    if compat == "exact":
        return (1.0 - a) * n - a * ((k - n) / k)
    if compat == "paper":
        return (1.0 - a) * n - (a * (k - n)) / k
    raise ValueError(f"compat {compat!r}: expected one of {COMPAT_MODES}")


def t_unnormalised(n_p: np.ndarray, K: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """T_u(a) = (1-a)*n_p - a*n_n, with n_n = K - n_p."""
    a = _column(alpha)
    n = np.asarray(n_p, np.float64)
    return (1.0 - a) * n - a * (np.asarray(K, np.float64) - n)


def ndcg_paper(inK: pl.Series) -> np.ndarray:
    """nDCG (paper) = DCG / IDCG(n_p): ideal over the n_p positives retrieved; 0 when n_p = 0."""
    gain = dcg(inK)
    ideal = ideal_dcg(inK.list.sum().to_numpy())
    return np.divide(gain, ideal, out=np.zeros_like(gain), where=ideal > 0)


def _known_np(Np: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Np as int64 with 0 where unknown, whether Np is known): Np is unknown (NaN, from a null)
    for samples without a count of relevant documents, such as production traces."""
    values = np.asarray(Np, np.float64)
    known = ~np.isnan(values)
    return np.where(known, values, 0).astype(np.int64), known


def ndcg_at_k(inK: pl.Series, Np: np.ndarray, K: np.ndarray) -> np.ndarray:
    """nDCG@K (standard) = DCG / IDCG(min(Np, K)): ideal over all Np positives, cut at K (not at
    the length of ``inK``, which is shorter when the ranker retrieved fewer than K, as in
    trec_eval's ndcg_cut); NaN (undefined) when Np = 0 or unknown."""
    ideal = ideal_dcg(np.minimum(_known_np(Np)[0], np.asarray(K, np.int64)))
    return np.divide(dcg(inK), ideal, out=np.full(len(ideal), np.nan), where=ideal > 0)


def graded_ndcg_at_k(grades: pl.Series, ideal_grades: pl.Series, K: np.ndarray) -> np.ndarray:
    """nDCG@K with graded gains 2^grade - 1 and discount log2(i+1): DCG over ``grades`` (the grade
    of each top-K text, 0 when not relevant or unjudged; fewer than K when the ranker retrieved
    fewer), IDCG over ``ideal_grades`` (the query's positive grades) sorted in descending order and
    cut at K; NaN (undefined) without a positive. With 0/1 grades it is :func:`ndcg_at_k`."""
    frame = pl.DataFrame({"grades": grades, "ideal": ideal_grades, "K": np.asarray(K, np.int64)})
    gains = frame.select(
        top=pl.col("grades").list.eval(2.0 ** pl.element().cast(pl.Float64) - 1.0),
        ideal=pl.col("ideal").list.sort(descending=True).list.head(pl.col("K"))
        .list.eval(2.0 ** pl.element().cast(pl.Float64) - 1.0),
    )
    has_ideal = gains["ideal"].list.len().to_numpy() > 0
    ideal = np.zeros(len(has_ideal))
    ideal[has_ideal] = dcg(gains["ideal"].filter(pl.Series(has_ideal)))
    return np.divide(dcg(gains["top"]), ideal, out=np.full(len(ideal), np.nan), where=ideal > 0)


def reciprocal_rank_at_k(inK: pl.Series, Np: np.ndarray) -> np.ndarray:
    """RR@K = 1 / rank of the first positive in the top K, 0 if none; NaN (undefined) when Np = 0.
    Defined without Np: an unknown Np (NaN) gives the value."""
    flat, owner, rank = flatten(inK)
    first = np.full(len(inK), np.inf)
    np.minimum.at(first, owner[flat > 0], rank[flat > 0].astype(np.float64))
    values, known = _known_np(Np)
    return np.where(known & (values == 0), np.nan, 1.0 / first)


def average_precision_at_k(inK: pl.Series, Np: np.ndarray) -> np.ndarray:
    """AP@K = sum_{i<=K} inK_i * P@i / Np (truncated AP with |R| = Np); NaN (undefined) when Np = 0 or unknown."""
    flat, owner, rank = flatten(inK)
    lengths = inK.list.len().to_numpy().astype(np.int64)
    running = np.cumsum(flat)
    before = np.concatenate([[0.0], running])[np.cumsum(lengths) - lengths]
    hits_so_far = running - np.repeat(before, lengths)
    total = np.bincount(owner, weights=flat * hits_so_far / rank, minlength=len(inK))
    positives = np.asarray(Np, np.float64)
    return np.divide(total, positives, out=np.full(len(inK), np.nan), where=positives > 0)
