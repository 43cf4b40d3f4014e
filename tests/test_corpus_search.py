"""Exact corpus search in blocks against brute force; corpus-level measures by hand and against trec_eval."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from retrieval_response.embedding.backends import l2_normalise
from retrieval_response.ranking.corpus_search import corpus_measures, exact_top_k

pytestmark = pytest.mark.unit


def brute_force(queries: np.ndarray, documents: np.ndarray, k: int) -> np.ndarray:
    """Top-k by one full score matrix (the same normalisation, so exact ties stay exact)."""
    scores = l2_normalise(queries) @ l2_normalise(documents).T
    index = np.broadcast_to(np.arange(documents.shape[0]), scores.shape)
    return np.lexsort((index, -scores), axis=1)[:, :k]


@pytest.mark.parametrize(("query_block", "doc_block"), [(256, 16384), (7, 50), (2, 3), (3, 999)])
def test_blocked_search_equals_brute_force_whatever_the_blocks(query_block, doc_block):
    rng = np.random.default_rng(0)
    documents = rng.integers(-2, 3, size=(300, 4)).astype(np.float32)  # small integers: many exact ties
    documents[5] = documents[17] * 3  # the same direction: equal cosines
    documents[0] = 0  # a zero vector has cosine 0 with everything
    queries = rng.integers(-2, 3, size=(20, 4)).astype(np.float32) + 0.5
    index, scores = exact_top_k(queries, documents, 10, query_block=query_block, doc_block=doc_block)
    expected, _ = exact_top_k(queries, documents, 10, query_block=10**6, doc_block=10**6)
    assert np.array_equal(index, expected)
    assert np.all(np.diff(scores, axis=1) <= 0)
    assert np.array_equal(index, brute_force(queries, documents, 10))


def test_k_above_the_corpus_size_returns_the_whole_corpus_in_order():
    documents = np.eye(3, dtype=np.float32)
    index, scores = exact_top_k(np.array([[0.1, 1, 0.5]], dtype=np.float32), documents, 10)
    assert index.tolist() == [[1, 2, 0]]
    with pytest.raises(ValueError):
        exact_top_k(documents, documents, 0)


def _measures(top: dict[str, list[str]], qrels: dict[str, dict[str, int]], Ks: list[int]) -> pl.DataFrame:
    return corpus_measures(
        pl.DataFrame({"qid": list(top), "docids": list(top.values())}, schema={"qid": pl.String, "docids": pl.List(pl.String)}),
        pl.DataFrame([(q, d, g) for q, judged in qrels.items() for d, g in judged.items()],
                     schema=["qid", "docid", "grade"], orient="row"),
        Ks,
    )


def test_corpus_measures_by_hand_with_unjudged_documents_and_a_query_without_positives():
    """The ranked-list contract (docs/METHODS.md#ranked-list-measures) on one graded query with
    unjudged documents and one query whose only judgment is negative."""
    table = _measures({"q1": ["u1", "a", "c", "b", "u2"], "q2": ["x", "y", "w", "v", "t"]},
                      {"q1": {"a": 2, "b": 1, "c": 0, "z": 1}, "q2": {"x": 0}}, [1, 3, 5])
    assert table.select("qid", "K").rows() == [(q, k) for q in ("q1", "q2") for k in (1, 3, 5)]
    q1 = {row["K"]: row for row in table.filter(pl.col("qid") == "q1").iter_rows(named=True)}
    assert q1[3]["Np"] == 3  # a, b, z: |R| counts the judged positives, retrieved or not
    assert (q1[3]["P"], q1[3]["R"], q1[3]["judged"]) == (pytest.approx(1 / 3), pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert q1[5]["P"] == pytest.approx(2 / 5)  # u1, u2 unjudged: not relevant
    ideal = 3 + 1 / math.log2(3) + 1 / 2  # gains 2^g - 1 of the grades 2, 1, 1
    assert q1[3]["nDCG@K"] == pytest.approx((3 / math.log2(3)) / ideal)
    assert q1[1]["P"] == q1[1]["R"] == q1[1]["nDCG@K"] == 0.0
    q2 = table.filter(pl.col("qid") == "q2")
    assert q2["R"].null_count() == q2["nDCG@K"].null_count() == 3  # undefined, not 0
    assert q2["P"].to_list() == [0.0, 0.0, 0.0] and q2["judged"].to_list() == [1.0, pytest.approx(1 / 3), 0.2]


@pytest.mark.parametrize("seed", range(3))
def test_corpus_measures_equal_trec_eval_through_ir_measures(seed):
    """P, R, nDCG@K (gains 2^grade - 1) and the judged share against trec_eval on random graded
    qrels with unjudged documents; run scores strictly decreasing, so trec_eval keeps the order."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import Judged, P, R, nDCG

    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(30)]
    top, qrels = {}, {}
    for q in range(25):
        judged = rng.choice(docs, size=int(rng.integers(1, 15)), replace=False).tolist()
        qrels[f"q{q}"] = {d: int(g) for d, g in zip(judged, rng.integers(0, 4, size=len(judged)), strict=True)}
        top[f"q{q}"] = rng.choice(docs, size=10, replace=False).tolist()
    Ks = [1, 2, 5, 10]
    table = _measures(top, qrels, Ks)
    compared = 0
    for row in table.iter_rows(named=True):
        run = {row["qid"]: {d: float(100 - i) for i, d in enumerate(top[row["qid"]])}}
        k = row["K"]
        measures = {"P": P @ k, "R": R @ k, "nDCG@K": nDCG(gains={g: 2**g - 1 for g in range(4)}) @ k, "judged": Judged @ k}
        theirs = ir_measures.calc_aggregate(list(measures.values()), {row["qid"]: qrels[row["qid"]]}, run)
        for name, measure in measures.items():
            if row["Np"] == 0 and name in ("R", "nDCG@K"):
                assert row[name] is None  # trec_eval says 0: undefined here
            else:
                assert row[name] == pytest.approx(theirs[measure], abs=1e-12), (name, row)
        compared += row["Np"] > 0
    assert compared > 50
