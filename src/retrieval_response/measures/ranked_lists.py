"""Formulas of ranked lists, vectorised over many lists: hits in the top K, P, R and DCG.

The one home of these formulas: the ranking stage's P and R (``ranking.cosine_ranking``) and their
check (``tables.sample_rules``), the ranked-list evaluator (``measures.ranked``, which computes the
corpus-level ranked table) and the analysis' measures (:mod:`.registry`) compute with them.

Ranks are 1-based; rank i is discounted by log2(i + 1). A list column holds one ranked list per
row, best first; its flat form (:func:`flatten`) is every item in row order with the row it
belongs to and its rank. Sums run left to right, so the same list gives the same bits wherever
it is summed.
"""

from __future__ import annotations

import numpy as np
import polars as pl


def hits_at_k(relevant: np.ndarray, Ks) -> np.ndarray:
    """n_p[q, j] = sum_{i <= K_j} relevant[q, i]: the relevant items among the first K_j of row q.

    ``relevant``: 0/1 or boolean, shape (Q, L) with L >= max(Ks); returns int64 (Q, len(Ks)).
    """
    return np.cumsum(np.asarray(relevant, np.int64), axis=1)[:, np.asarray(Ks, np.int64) - 1]


def precision(n_p: np.ndarray, K: np.ndarray) -> np.ndarray:
    """P = n_p / K."""
    return np.asarray(n_p, np.float64) / np.asarray(K, np.float64)


def recall(n_p: np.ndarray, Np: np.ndarray) -> np.ndarray:
    """R = n_p / Np."""
    return np.asarray(n_p, np.float64) / np.asarray(Np, np.float64)


def discounts(depth: int) -> np.ndarray:
    """1/log2(i+1) for ranks i = 1..depth."""
    return 1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64))


def flatten(lists: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values as float64, row of each value, its 1-based rank in the row) of a list column."""
    lengths = lists.list.len().to_numpy().astype(np.int64)
    flat = lists.explode().to_numpy().astype(np.float64)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    rank = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + 1
    return flat, owner, rank


def flat_dcg(gains: np.ndarray, owner: np.ndarray, rank: np.ndarray, rows: int) -> np.ndarray:
    """DCG per row = sum over the row's items of gain / log2(rank + 1), summed in flat order, for
    ``rows`` rows of a flat list (:func:`flatten`); 0 for an empty row."""
    return np.bincount(owner, weights=gains * discounts(int(rank.max(initial=0)))[rank - 1], minlength=rows)


def dcg(gains: pl.Series) -> np.ndarray:
    """DCG = sum_{i=1..len} gains_i / log2(i+1), summed left to right, per list of a list column."""
    flat, owner, rank = flatten(gains)
    return flat_dcg(flat, owner, rank, len(gains))


def ideal_dcg(n_relevant: np.ndarray) -> np.ndarray:
    """IDCG(m) = sum_{i=1..m} 1/log2(i+1), summed left to right (IDCG(0) = 0): the DCG of m
    relevant items with gain 1 ranked first."""
    m = np.asarray(n_relevant, np.int64)
    table = np.concatenate([[0.0], np.cumsum(discounts(int(m.max(initial=0))))])
    return table[m]
