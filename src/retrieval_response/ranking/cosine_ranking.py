"""Cosine ranking of each query's candidates -> ranked samples, and their invariant checks.

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
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.workflow_tables import is_corpus_ranking, retrieved_rank_holds_every_other

Encode = Callable[[list[str], str], np.ndarray]

RANKED_SCHEMA = {
    "id": pl.String, "subset": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32,
    "K": pl.List(pl.Int32), "P": pl.List(pl.Float64), "R": pl.List(pl.Float64), "rank": pl.List(pl.Int32),
}
TOLERANCE = 1e-9


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
    positives_so_far = np.cumsum(rank < Np, axis=1)
    k = np.asarray(Ks)
    n_p = positives_so_far[:, k - 1].astype(np.float64)
    return n_p / k, n_p / Np


def rank_samples(
    texts: pl.DataFrame, encode: Encode, *, embedder_code: str, Nc: int, Np: int, Ks: list[int]
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
    return ranked_table(serving, rank, embedder_code=embedder_code, Np=Np, Ks=Ks), report


def ranked_table(serving: pl.DataFrame, rank: np.ndarray, *, embedder_code: str, Np: int, Ks: list[int]) -> pl.DataFrame:
    """The ranked layout (``RANKED_SCHEMA``) of ``serving`` (id, subset) with candidate order ``rank``
    (int (Q, Nc), row q for query q); P and R at each K of the sorted list ``Ks``."""
    Q, Nc = serving.height, rank.shape[1]
    P, R = precision_recall(rank, Np, Ks)
    return pl.DataFrame(
        {
            "id": serving["id"],
            "subset": serving["subset"],
            "E": pl.Series([embedder_code] * Q, dtype=pl.String),
            "Nc": pl.Series([Nc] * Q, dtype=pl.Int32),
            "Np": pl.Series([Np] * Q, dtype=pl.Int32),
            "K": pl.Series(np.tile(np.asarray(Ks, dtype=np.int32), (Q, 1))).cast(pl.List(pl.Int32)),
            "P": pl.Series(P).cast(pl.List(pl.Float64)),
            "R": pl.Series(R).cast(pl.List(pl.Float64)),
            "rank": pl.Series(rank.astype(np.int32)).cast(pl.List(pl.Int32)),
        },
        schema=RANKED_SCHEMA,
    )


def _first_violation(df: pl.DataFrame, bad: pl.Expr) -> str | None:
    rows = df.filter(bad.fill_null(True))
    return rows["id"][0] if rows.height else None


def _positives_in_prefix(df: pl.DataFrame) -> pl.DataFrame:
    """(row, K, n_p): positives among rank[:K] for every K of every row (long format); a K beyond
    len(rank) (a short corpus-level retrieval) counts the whole rank."""
    ranks = (
        df.select("row", "Np", "rank")
        .explode("rank")
        .with_columns(depth=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("row"))
        .with_columns(n_p=(pl.col("rank") < pl.col("Np")).cum_sum().over("row"))
    )
    wanted = (df.select("row", "K", retrieved=pl.col("rank").list.len().cast(pl.Int32)).explode("K")
              .with_columns(depth=pl.min_horizontal(pl.col("K").cast(pl.Int32), "retrieved")))
    return wanted.join(ranks.select("row", "depth", "n_p"), on=["row", "depth"], how="left").select("row", "K", "n_p")


def check_ranked_invariants(df: pl.DataFrame, path: str | os.PathLike) -> None:
    """Raise ``InputError(path, "id <id>", rule)`` for the first ranked sample that breaks a rule of
    docs/METHODS.md#ranked-table.

    Rules: len(P) == len(R) == len(K); rank distinct values of 0..Nc-1: all Nc of them (a pool),
    or, in a corpus-level ranking (:func:`is_corpus_ranking`), at least one and every index >= Np;
    1 <= Np < Nc; K strictly ascending, >= 1 and (pools) <= Nc; P = n_p/K and R = n_p/Np with n_p
    the positives (index < Np) in rank[:K]; (id, E, Nc, Np) unique.
    """
    missing = set(RANKED_SCHEMA) - set(df.columns)
    if missing:
        raise InputError(path, "columns", f"missing ranked columns {sorted(missing)}")
    rank = pl.col("rank")
    distinct_in_range = (rank.list.min() >= 0) & (rank.list.max() <= pl.col("Nc") - 1) & (
        rank.list.n_unique() == rank.list.len())
    ascending = (pl.col("K").list.n_unique() == pl.col("K").list.len()) & (pl.col("K").list.sort() == pl.col("K")) & (
        pl.col("K").list.min() >= 1)
    if is_corpus_ranking(df.columns):
        shape_rules = [
            ("rank lists distinct candidates of 0..Nc-1, every index >= Np among them",
             distinct_in_range & retrieved_rank_holds_every_other()),
            ("K strictly ascending, each >= 1", ascending),
        ]
    else:
        shape_rules = [
            ("len(rank) == Nc", rank.list.len() == pl.col("Nc")),
            ("rank is a permutation of 0..Nc-1", distinct_in_range),
            ("K strictly ascending within 1..Nc", ascending & (pl.col("K").list.max() <= pl.col("Nc"))),
        ]
    rules = [
        ("len(P) == len(R) == len(K)", (pl.col("P").list.len() == pl.col("K").list.len())
         & (pl.col("R").list.len() == pl.col("K").list.len())),
        *shape_rules,
        ("1 <= Np < Nc", (pl.col("Np") >= 1) & (pl.col("Np") < pl.col("Nc"))),
        ("(id, E, Nc, Np) unique", ~pl.struct("id", "E", "Nc", "Np").is_duplicated()),
    ]
    for rule, ok in rules:
        bad_id = _first_violation(df, ~ok)
        if bad_id is not None:
            raise InputError(path, f"id {bad_id}", rule)
    _check_precision_recall(df, path)


def _check_precision_recall(df: pl.DataFrame, path: str | os.PathLike) -> None:
    numbered = df.with_row_index("row")
    measured = numbered.select("row", "id", "Np", "K", "P", "R").explode("K", "P", "R")
    joined = measured.join(_positives_in_prefix(numbered), on=["row", "K"], how="left")
    for name, expected in (("P", pl.col("n_p") / pl.col("K")), ("R", pl.col("n_p") / pl.col("Np"))):
        bad_id = _first_violation(joined, (pl.col(name) - expected).abs() > TOLERANCE)
        if bad_id is not None:
            raise InputError(path, f"id {bad_id}", f"{name} does not match rank (n_p/{'K' if name == 'P' else 'Np'})")


def write_ranked(df: pl.DataFrame, path: str | os.PathLike) -> None:
    """Check the ranked invariants, then write ``df`` atomically as zstd Parquet."""
    check_ranked_invariants(df, path)
    write_parquet(df, path)
