"""Corpus-level search: the top-K of a whole corpus per query (their measures against graded qrels
are the ranked-list evaluator's, :mod:`retrieval_response.measures.ranked`).

Search (:func:`exact_top_k`) is exact cosine search: query and document vectors are
L2-normalised, and the corpus is scanned in blocks of ``doc_block`` documents for blocks of
``query_block`` queries, keeping a running top-K; so memory is bounded by
``query_block x doc_block`` scores whatever the corpus size. The order is by descending
cosine, ties (equal computed cosines) by ascending document index. The block products are BLAS
matrix products, whose last bit can depend on the shapes multiplied: cosines equal in exact
arithmetic may then differ by a rounding step, and their order with them.
"""

from __future__ import annotations

import numpy as np

from retrieval_response.embedding.backends import l2_normalise

QUERY_BLOCK = 256
DOC_BLOCK = 16384
"""Default block sizes: 256 x 16,384 float32 scores = 16 MiB per block product."""


def _sorted(scores: np.ndarray, index: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` columns of each row ordered by (score desc, index asc)."""
    order = np.lexsort((index, -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(index, order, 1)


def _block_top_k(scores: np.ndarray, offset: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best (score desc, index asc) columns of ``scores`` (Q, B) with indexes offset + column.

    ``argpartition`` picks k columns per row; a row where more than k columns reach its k-th
    score (a tie at the boundary) is redone over all its columns that reach it, so the index rule
    decides which tied columns stay."""
    columns = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    picked = np.take_along_axis(scores, columns, 1)
    kth = picked.min(axis=1, keepdims=True)
    tied = np.flatnonzero((scores >= kth).sum(axis=1) > k)
    if tied.size:
        keep = scores[tied] >= kth[tied]
        width = int(keep.sum(axis=1).max())
        candidates = np.argsort(~keep, axis=1, kind="stable")[:, :width]
        tied_scores = np.where(np.take_along_axis(keep, candidates, 1),
                               np.take_along_axis(scores[tied], candidates, 1), -np.inf)
        tied_scores, candidates = _sorted(tied_scores, candidates, k)
        picked[tied], columns[tied] = tied_scores, candidates
    return picked, columns.astype(np.int64) + offset


def top_k_of_scores(scores: np.ndarray, k: int) -> np.ndarray:
    """int64 (Q, k') column indexes of the k' = min(k, D) best of each row of ``scores`` (Q, D),
    by descending score, ties by ascending index."""
    k = min(k, scores.shape[1])
    return _sorted(*_block_top_k(scores, 0, k), k)[1]


def exact_top_k(
    queries: np.ndarray, documents: np.ndarray, k: int, *, query_block: int = QUERY_BLOCK, doc_block: int = DOC_BLOCK
) -> tuple[np.ndarray, np.ndarray]:
    """(indexes int64 (Q, k'), cosines float32 (Q, k')) of the k' = min(k, D) documents of
    ``documents`` (D, d) nearest to each of ``queries`` (Q, d) by cosine, best first, ties (equal
    computed cosines) by ascending index. ValueError for k < 1 or mismatched dimensions."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if queries.shape[1] != documents.shape[1]:
        raise ValueError(f"query dimension {queries.shape[1]} != document dimension {documents.shape[1]}")
    Q, D = queries.shape[0], documents.shape[0]
    k = min(k, D)
    out_index = np.zeros((Q, k), dtype=np.int64)
    out_score = np.zeros((Q, k), dtype=np.float32)
    for q0 in range(0, Q, query_block):
        q = l2_normalise(queries[q0 : q0 + query_block])
        best_score = np.empty((q.shape[0], 0), dtype=np.float32)
        best_index = np.empty((q.shape[0], 0), dtype=np.int64)
        for d0 in range(0, D, doc_block):
            block = l2_normalise(documents[d0 : d0 + doc_block])
            block_score, block_index = _block_top_k(q @ block.T, d0, min(k, block.shape[0]))
            best_score, best_index = _sorted(np.hstack([best_score, block_score]),
                                             np.hstack([best_index, block_index]), k)
        out_index[q0 : q0 + q.shape[0]], out_score[q0 : q0 + q.shape[0]] = best_index, best_score
    return out_index, out_score
