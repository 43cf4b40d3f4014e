"""Exact corpus search in blocks against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_response.embedding.backends import l2_normalise
from retrieval_response.ranking.corpus_search import exact_top_k

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
