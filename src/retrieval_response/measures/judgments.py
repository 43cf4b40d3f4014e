"""Measures built from the document judgments of the top-K texts (docs/METHODS.md#measures): eRAG's
P, success, MRR and nDCG from the eRAG utilities, UDCG from the UDCG utilities, and the positives
and nDCG of the UMBRELA labels. Each is NaN where a judgment of the top K is missing.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from retrieval_response.measures.ranked_lists import flat_dcg, flatten, ideal_dcg

UDCG_RELEVANT_WEIGHT = 1.0
"""UDCG's weight of a relevant text (the released code's default)."""
UDCG_IRRELEVANT_WEIGHT = -1.0 / 3.0
"""UDCG's weight of an irrelevant text (the released code's default, -1/3; its docstring says otherwise)."""
UMBRELA_RELEVANT = 2
"""An UMBRELA label >= this counts as relevant (n_p_umbrela, the agreement with qrels)."""

JUDGMENT_COLUMNS = {"erag_utility": pl.List(pl.Float64), "udcg_utility": pl.List(pl.Float64),
                    "umbrela_label": pl.List(pl.Int8)}
"""Per-sample lists, aligned with ``inK``, of the document judgments of the top-K texts (``tables.collect``):
eRAG utility (the one-text answer's judge-free score), UDCG utility (1 - P(NO-RESPONSE)), UMBRELA label 0-3."""
JUDGMENTS_NEED_GOLD = ("erag_utility",)
"""The judgment columns scored against the query's gold answers (``tables.collect.judgment_utilities``)."""


def _flat(values: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flattened float values (NaN for null or NaN), owner sample, 1-based rank, and per-sample
    completeness (no value missing) of a list column whose lists are non-empty (one per top-K)."""
    flat, owner, rank = flatten(values.cast(pl.List(pl.Float64)))
    missing = np.bincount(owner, weights=np.isnan(flat), minlength=len(values))
    return flat, owner, rank, missing == 0


def aligned_judgments(column: str) -> pl.Expr:
    """Judgment list ``column`` as List(Float64) where it has one value per item of ``inK``; else
    (absent row, other length) a list of K NaN, i.e. every value missing."""
    return (pl.when(pl.col(column).list.len() == pl.col("inK").list.len())
            .then(pl.col(column).cast(pl.List(pl.Float64)))
            .otherwise(pl.col("inK").list.eval(pl.element().cast(pl.Float64) * np.nan))
            .alias(column))


def erag_precision(utility: pl.Series) -> np.ndarray:
    """eRAG_P = (1/K) * sum_{i<=K} u_i, u_i the eRAG utility of the i-th text (eRAG's ``P`` for
    continuous labels: the mean over the top K); NaN when a utility is missing."""
    flat, owner, _, complete = _flat(utility)
    lengths = np.bincount(owner, minlength=len(complete))
    total = np.bincount(owner, weights=np.nan_to_num(flat), minlength=len(complete))
    return np.where(complete, total / np.maximum(lengths, 1), np.nan)


def erag_success(utility: pl.Series) -> np.ndarray:
    """eRAG_success = max_{i<=K} u_i (eRAG's ``success`` for continuous labels); NaN when a utility is missing."""
    flat, owner, _, complete = _flat(utility)
    best = np.full(len(complete), -np.inf)
    np.maximum.at(best, owner, np.nan_to_num(flat, nan=-np.inf))
    return np.where(complete, best, np.nan)


def _binary(utility: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_flat` of ``utility`` with, instead of completeness, whether each sample's top K has
    every utility and each one 0 or 1 (eRAG hands such labels to pytrec_eval)."""
    flat, owner, rank, complete = _flat(utility)
    other = np.bincount(owner, weights=~np.isin(flat, (0.0, 1.0)), minlength=len(complete))
    return flat, owner, rank, complete & (other == 0)


def erag_mrr(utility: pl.Series) -> np.ndarray:
    """eRAG_MRR = 1 / (rank of the first text with u_i = 1 in the top K), 0 when none has (eRAG's
    pytrec_eval ``recip_rank`` on 0/1 labels); NaN when a utility is missing or is not 0 or 1
    (continuous utilities: ``answer_recall``, ``answer_f1``)."""
    flat, owner, rank, binary = _binary(utility)
    first = np.full(len(binary), np.inf)
    hit = flat == 1.0
    np.minimum.at(first, owner[hit], rank[hit].astype(np.float64))
    return np.where(binary, 1.0 / first, np.nan)


def erag_ndcg(utility: pl.Series) -> np.ndarray:
    """eRAG_nDCG = DCG / IDCG over the top K with gains u_i in {0, 1} and discount log2(i+1), the
    ideal putting the top K's own m = sum u_i ones first (IDCG = sum_{i<=m} 1/log2(i+1)); 0 when
    m = 0. eRAG's pytrec_eval ``ndcg_cut_K`` on 0/1 labels, whose qrels are the K judged texts;
    NaN when a utility is missing or is not 0 or 1."""
    flat, owner, rank, binary = _binary(utility)
    gains = np.where(flat == 1.0, 1.0, 0.0)
    dcg_value = flat_dcg(gains, owner, rank, len(binary))
    ideal = ideal_dcg(np.bincount(owner, weights=gains, minlength=len(binary)).astype(np.int64))
    value = np.divide(dcg_value, ideal, out=np.zeros_like(dcg_value), where=ideal > 0)
    return np.where(binary, value, np.nan)


def udcg(utility: pl.Series, inK: pl.Series) -> np.ndarray:
    """UDCG = sigmoid((1/K) * sum_{i<=K} w_i * u_i), u_i = 1 - P(NO-RESPONSE | text i alone),
    w_i = UDCG_RELEVANT_WEIGHT (+1) when text i is relevant (inK_i = 1) else UDCG_IRRELEVANT_WEIGHT
    (-1/3), sigmoid(x) = 1 / (1 + e^-x): the released code's ``compute_udcg_score``. NaN when a
    utility is missing (the released code would skip it in the sum but still divide by K)."""
    flat, owner, _, complete = _flat(utility)
    relevant = inK.explode().cast(pl.Float64).to_numpy()
    weights = np.where(relevant > 0, UDCG_RELEVANT_WEIGHT, UDCG_IRRELEVANT_WEIGHT)
    lengths = np.bincount(owner, minlength=len(complete))
    mean = np.bincount(owner, weights=weights * np.nan_to_num(flat), minlength=len(complete)) / np.maximum(lengths, 1)
    return np.where(complete, 1.0 / (1.0 + np.exp(-mean)), np.nan)


def umbrela_positives(labels: pl.Series) -> np.ndarray:
    """n_p_umbrela = #{i <= K : label_i >= UMBRELA_RELEVANT} (texts UMBRELA calls relevant); NaN when a label is missing."""
    flat, owner, _, complete = _flat(labels)
    count = np.bincount(owner, weights=np.nan_to_num(flat) >= UMBRELA_RELEVANT, minlength=len(complete))
    return np.where(complete, count, np.nan)


def umbrela_ndcg(labels: pl.Series) -> np.ndarray:
    """nDCG_umbrela = DCG / IDCG with gains g_i = 2^label_i - 1 and discount log2(i+1); the ideal
    sorts the top K's own gains in descending order (no Np needed, as the paper's nDCG); 0 when
    every gain is 0; NaN when a label is missing."""
    flat, owner, rank, complete = _flat(labels)
    gain = np.exp2(np.nan_to_num(flat)) - 1.0
    dcg_value = flat_dcg(gain, owner, rank, len(complete))
    ideal = flat_dcg(gain[np.lexsort((-gain, owner))], owner, rank, len(complete))
    value = np.divide(dcg_value, ideal, out=np.zeros_like(dcg_value), where=ideal > 0)
    return np.where(complete, value, np.nan)
