"""Small synthetic texts and ranked tables (DESIGN.md layouts) for tests and benchmarks."""

from __future__ import annotations

import numpy as np
import polars as pl


def synthetic_texts(n_queries: int, n_pos: int = 3, n_neg: int = 5, seed: int = 0) -> pl.DataFrame:
    """Texts table: ids ``S-0..``, subset ``S``, query and numbered positive/negative texts."""
    rng = np.random.default_rng(seed)
    words = np.array(["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda"])
    ids = [f"S-{i}" for i in range(n_queries)]
    return pl.DataFrame({
        "id": ids,
        "subset": ["S"] * n_queries,
        "q": [f"What about {' '.join(rng.choice(words, 3))} ({i})?" for i in range(n_queries)],
        "p": [[f"Positive {j} of {i}: {' '.join(rng.choice(words, 6))}." for j in range(n_pos)]
              for i in range(n_queries)],
        "n": [[f"Negative {j} of {i}: {' '.join(rng.choice(words, 6))}." for j in range(n_neg)]
              for i in range(n_queries)],
    })


def synthetic_ranked(texts: pl.DataFrame, embedder: str, nc: int, np_: int, ks: list[int],
                     seed: int = 0) -> pl.DataFrame:
    """Ranked table for one (E, Nc, Np) design: a seeded random permutation of the Nc candidates
    per query, with P and R at each K computed from it."""
    rng = np.random.default_rng(seed)
    ranks = np.array([rng.permutation(nc) for _ in range(texts.height)], dtype=np.int32)
    hits = np.cumsum(ranks < np_, axis=1)[:, np.array(ks) - 1]
    return pl.DataFrame({
        "id": texts["id"], "subset": texts["subset"],
        "E": [embedder] * texts.height,
        "Nc": pl.Series([nc] * texts.height, dtype=pl.Int32),
        "Np": pl.Series([np_] * texts.height, dtype=pl.Int32),
        "K": pl.Series([ks] * texts.height, dtype=pl.List(pl.Int32)),
        "P": pl.Series((hits / np.array(ks)).tolist(), dtype=pl.List(pl.Float64)),
        "R": pl.Series((hits / np_).tolist(), dtype=pl.List(pl.Float64)),
        "rank": pl.Series(ranks.tolist(), dtype=pl.List(pl.Int32)),
    })


GRADE_DRIVERS = ("recall", "precision", "random")
"""What drives the grades of :func:`graded_by_driver`."""


def graded_by_driver(n_queries: int, driver: str, seed: int = 0, *,
                     designs: tuple[tuple[int, int, tuple[int, ...]], ...] = ((10, 2, (1, 2, 3, 4, 6, 8)),
                                                                              (10, 4, (1, 2, 3, 4, 6, 8))),
                     perfect: bool = False, noise: float = 0.6) -> pl.DataFrame:
    """A graded table (id, subset ``S``, E ``X``, Nc, Np, K, rank, inK, grade) whose answer is known.

    Each query is ranked once per design (Nc, Np, Ks): a seeded random permutation of its Nc
    candidates (positives are the first Np), or the positives first when ``perfect``. The grade
    of a sample is rint(1 + 4 x + N(0, ``noise``)) clipped to 1..5, with x = R = n_p / Np
    (``driver`` "recall") or P = n_p / K ("precision"); "random" draws it uniformly from 1..5,
    independent of the ranking.
    """
    if driver not in GRADE_DRIVERS:
        raise ValueError(f"driver {driver!r}: expected one of {GRADE_DRIVERS}")
    rng = np.random.default_rng(seed)
    parts = []
    for nc, np_, ks in designs:
        ranks = (np.tile(np.arange(nc), (n_queries, 1)) if perfect
                 else np.argsort(rng.random((n_queries, nc)), axis=1))
        positive = (ranks < np_).astype(np.int8)  # ranks[q, i]: the candidate at position i
        for k in ks:
            n_p = positive[:, :k].sum(axis=1)
            x = n_p / np_ if driver == "recall" else n_p / k
            latent = 1 + 4 * x + rng.normal(0.0, noise, n_queries)
            grade = rng.integers(1, 6, n_queries) if driver == "random" else np.clip(np.rint(latent), 1, 5)
            parts.append(pl.DataFrame({
                "id": [f"S-{i}" for i in range(n_queries)], "subset": ["S"] * n_queries, "E": ["X"] * n_queries,
                "Nc": pl.Series([nc] * n_queries, dtype=pl.Int32), "Np": pl.Series([np_] * n_queries, dtype=pl.Int32),
                "K": pl.Series([k] * n_queries, dtype=pl.Int32),
                "rank": pl.Series(ranks[:, :k].tolist(), dtype=pl.List(pl.Int32)),
                "inK": pl.Series(positive[:, :k].tolist(), dtype=pl.List(pl.Int8)),
                "grade": pl.Series(grade.astype(np.int64), dtype=pl.Int64),
            }))
    return pl.concat(parts)
def synthetic_analysis_table(designs: dict[str, tuple[int, int, int, tuple[int, ...]]], embedders: tuple[str, ...],
                             seed: int = 0) -> pl.DataFrame:
    """An analysis table (``results/analysis/graded.parquet``'s columns) with every target: per
    subset of ``designs`` (subset -> (queries, Nc, Np, K values)), query, ranker and K one
    sample of a seeded random ranking of the Nc candidates, a grade that rises with the positives
    in the top K, its probability-weighted grade (continuous) and three answer scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for subset, (n_queries, nc, np_, ks) in designs.items():
        for query in range(n_queries):
            for embedder in embedders:
                order = rng.permutation(nc)
                for k in ks:
                    hits = int((order[:k] < np_).sum())
                    grade = int(np.clip(round(1 + 3 * hits / np_ + rng.normal(0, 0.8)), 1, 5))
                    rows.append({
                        "id": f"{subset}-{query}", "subset": subset, "E": embedder, "Nc": nc, "Np": np_, "K": k,
                        "rank": order[:k].tolist(), "inK": (order[:k] < np_).astype(int).tolist(), "grade": grade,
                        "grade_expected": float(np.clip(grade + rng.normal(0, 0.3), 1, 5)),
                        "answer_f1": float(rng.uniform(0, 1) * hits / np_), "answer_recall": float(rng.uniform(0, 1)),
                        "answer_contains": bool(rng.uniform() < 0.3 + 0.5 * hits / np_),
                        "np_2K": int((order[: min(2 * k, nc)] < np_).sum()),
                    })
    return pl.DataFrame(rows).with_columns(
        pl.col("Nc", "Np", "K").cast(pl.Int32), pl.col("rank").cast(pl.List(pl.Int32)),
        pl.col("inK").cast(pl.List(pl.Int8)), pl.col("grade").cast(pl.Int8))
