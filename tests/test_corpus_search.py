"""Exact corpus search in blocks against brute force; corpus-level measures against the evaluator."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from retrieval_response.embedding.backends import l2_normalise
from retrieval_response.ranking.corpus_search import corpus_measures, exact_top_k
from retrieval_response.ranking.evaluator import ranked_metrics

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


def test_corpus_measures_equal_the_ranked_list_evaluator_with_unjudged_documents():
    qrels = {"q1": {"a": 2, "b": 1, "c": 0, "z": 1}, "q2": {"x": 0}, "q3": {"m": 3, "n": 1}}
    top = {"q1": ["u1", "a", "c", "b", "u2"], "q2": ["x", "y", "w", "v", "t"], "q3": ["n", "u", "m", "o", "p"]}
    table = corpus_measures(
        pl.DataFrame({"qid": list(top), "docids": list(top.values())}),
        pl.DataFrame([(q, d, g) for q, judged in qrels.items() for d, g in judged.items()],
                     schema=["qid", "docid", "grade"], orient="row"),
        [1, 3, 5],
    )
    assert table.select("qid", "K").rows() == [(q, k) for q in top for k in (1, 3, 5)]
    for row in table.iter_rows(named=True):
        expected = ranked_metrics(top[row["qid"]], qrels[row["qid"]], row["K"])
        assert row["Np"] == expected["n_relevant"]
        assert row["P"] == pytest.approx(expected["P@K"])
        assert row["judged"] == pytest.approx(expected["judged@K"])
        for name, key in (("R", "R@K"), ("nDCG", "nDCG@K")):
            assert (row[name] is None) == (expected[key] is None)
            if expected[key] is not None:
                assert row[name] == pytest.approx(expected[key])
