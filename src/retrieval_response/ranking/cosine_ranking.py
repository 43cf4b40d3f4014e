"""Cosine ranking of each query's candidates -> ranked samples.

For a design (Nc, Np) a query serves when len(p) >= Np and len(n) >= Nc - Np. Its candidates
are the first Np positives followed by the first Nc - Np negatives; candidate index i < Np is
positive i, index i >= Np is negative i - Np. ``rank`` lists the candidate indexes by
descending cosine similarity to the query; equal similarities are ordered by :func:`tie_keys`, a
hash of each candidate's text, a rule that cannot see which candidates are positives (candidate
order would put the positives first).
For each K: n_p(K) = number of indexes < Np among rank[:K], P = n_p/K, R = n_p/Np.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from retrieval_response.embedding.backends import l2_normalise
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.measures.ranked_lists import hits_at_k, precision, recall
from retrieval_response.tables.sample_rules import validate_ranked

Encode = Callable[[list[str], str], np.ndarray]

RANKED_SCHEMA = {
    "id": pl.String, "subset": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32,
    "K": pl.List(pl.Int32), "P": pl.List(pl.Float64), "R": pl.List(pl.Float64), "rank": pl.List(pl.Int32),
}


@dataclass
class RankingReport:
    """Counts of queries read, ranked, and skipped by reason for one (E, Nc, Np) design, and the
    ranker's notes (e.g. a run's ``candidates_not_in_run``)."""

    queries: int = 0
    ranked: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """``queries``, ``ranked``, ``skipped`` by reason, and the notes' keys."""
        return {"queries": self.queries, "ranked": self.ranked, "skipped": dict(self.skipped), **self.notes}


def design_ks(Ks: list[int], Nc: int, Np: int) -> list[int]:
    """The sorted distinct K values of a design; ValueError unless 1 <= Np < Nc and every K is in 1..Nc."""
    if not 1 <= Np < Nc:
        raise ValueError(f"design Nc={Nc}, Np={Np}: need 1 <= Np < Nc")
    out_of_range = sorted(k for k in Ks if not 1 <= k <= Nc)
    if out_of_range:
        raise ValueError(f"K values {out_of_range} are outside 1..Nc={Nc}")
    if not Ks:
        raise ValueError("the K list is empty")
    return sorted(set(int(k) for k in Ks))


def select_serving(texts: pl.DataFrame, Nc: int, Np: int) -> tuple[pl.DataFrame, RankingReport]:
    """Queries with len(p) >= Np and len(n) >= Nc - Np, and a report of the others by reason."""
    few_p = pl.col("p").list.len() < Np
    few_n = pl.col("n").list.len() < Nc - Np
    counts = texts.select(
        too_few_positives=few_p.sum(), too_few_negatives=(few_n & ~few_p).sum()
    ).row(0, named=True)
    serving = texts.filter(~few_p & ~few_n)
    report = RankingReport(queries=texts.height, ranked=serving.height, skipped={k: int(v) for k, v in counts.items()})
    return serving, report


def tie_keys(texts: list[str]) -> np.ndarray:
    """uint64 per text: the first 8 bytes of blake2b(text) (UTF-8), big-endian. The order of tied
    candidates of every ranker: it depends on a candidate's text only, never on whether it is a
    positive, and is the same for a text in every query, design and run."""
    return np.array([int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                                    "big") for text in texts], dtype=np.uint64)


def order_by_score(scores: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """int32 (Q, Nc): each row's candidate indexes by descending ``scores`` (Q, Nc), equal scores by
    ascending ``keys`` (Q, Nc; :func:`tie_keys` of the candidates' texts), then by index."""
    return np.lexsort((np.arange(scores.shape[1])[None, :].repeat(scores.shape[0], 0), keys, -scores),
                      axis=1).astype(np.int32)


def cosine_rank(query_vectors: np.ndarray, candidate_vectors: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """rank[q] = candidates by descending cos(query q, candidate c), ties by ``keys`` (:func:`order_by_score`).

    ``query_vectors``: (Q, d); ``candidate_vectors``: (Q, Nc, d); ``keys``: (Q, Nc). Returns int32 (Q, Nc).
    """
    q = l2_normalise(query_vectors)
    Q, Nc, d = candidate_vectors.shape
    c = l2_normalise(candidate_vectors.reshape(Q * Nc, d)).reshape(Q, Nc, d)
    similarity = np.matmul(c, q[:, :, None])[:, :, 0]
    return order_by_score(similarity, keys)


def precision_recall(rank: np.ndarray, Np: int, Ks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """P[q, j] = n_p(K_j)/K_j and R[q, j] = n_p(K_j)/Np, n_p(K) = #(rank[q, :K] < Np)."""
    n_p = hits_at_k(rank < Np, Ks)
    return precision(n_p, np.asarray(Ks)), recall(n_p, Np)


def rank_samples(
    texts: pl.DataFrame, encode: Encode, *, ranker_code: str, Nc: int, Np: int, Ks: list[int]
) -> tuple[pl.DataFrame, RankingReport]:
    """Ranked samples of every serving query of ``texts`` (id, subset, q, p, n) for design (Nc, Np).

    ``encode(texts, kind)`` maps texts to vectors (e.g. ``functools.partial(store.embed, embedder)``);
    it is called once for the queries and once for all candidates. Returns the table in the
    ranked layout (``RANKED_SCHEMA``) and the skip report. ValueError on a bad design or K.
    """
    Ks = design_ks(Ks, Nc, Np)
    serving, report = select_serving(texts, Nc, Np)
    candidates = serving.select(pl.concat_list(pl.col("p").list.head(Np), pl.col("n").list.head(Nc - Np)))
    candidate_texts = candidates.to_series().explode().to_list()
    Q = serving.height
    rank = np.zeros((0, Nc), dtype=np.int32)
    if Q:
        query_vectors = encode(serving["q"].to_list(), "query")
        candidate_vectors = encode(candidate_texts, "passage").reshape(Q, Nc, -1)
        rank = cosine_rank(query_vectors, candidate_vectors, tie_keys(candidate_texts).reshape(Q, Nc))
    return ranked_table(serving, rank, ranker_code=ranker_code, Np=Np, Ks=Ks), report


def ranked_table(serving: pl.DataFrame, rank: np.ndarray, *, ranker_code: str, Np: int, Ks: list[int]) -> pl.DataFrame:
    """The ranked layout (``RANKED_SCHEMA``) of ``serving`` (id, subset) with candidate order ``rank``
    (int (Q, Nc), row q for query q); P and R at each K of the sorted list ``Ks``."""
    Q, Nc = serving.height, rank.shape[1]
    P, R = precision_recall(rank, Np, Ks)
    return pl.DataFrame(
        {
            "id": serving["id"],
            "subset": serving["subset"],
            "E": pl.Series([ranker_code] * Q, dtype=pl.String),
            "Nc": pl.Series([Nc] * Q, dtype=pl.Int32),
            "Np": pl.Series([Np] * Q, dtype=pl.Int32),
            "K": pl.Series(np.tile(np.asarray(Ks, dtype=np.int32), (Q, 1))).cast(pl.List(pl.Int32)),
            "P": pl.Series(P).cast(pl.List(pl.Float64)),
            "R": pl.Series(R).cast(pl.List(pl.Float64)),
            "rank": pl.Series(rank.astype(np.int32)).cast(pl.List(pl.Int32)),
        },
        schema=RANKED_SCHEMA,
    )


def write_ranked(df: pl.DataFrame, path: str | os.PathLike) -> None:
    """Check the ranked-table rules (``tables.sample_rules.validate_ranked``), then write ``df``
    atomically as zstd Parquet."""
    validate_ranked(df, path)
    write_parquet(df, path)
