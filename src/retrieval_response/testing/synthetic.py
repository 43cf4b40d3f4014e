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
