"""The one vocabulary of measures: the analysis' per-sample RR@K, AP@K and nDCG@K agree with ir_measures and with
the ranked-list evaluator on random graded samples, and every name the evaluator reports is in the registry."""

import ir_measures
import numpy as np
import polars as pl
import pytest

from retrieval_response.analysis.measures import MEASURES, RANKED_LIST_MEASURES, add_features
from retrieval_response.ranking.evaluator import METRIC_NAMES, ranked_metrics

pytestmark = pytest.mark.unit


def _random_samples(seed: int, n: int = 40) -> pl.DataFrame:
    """n graded samples: Nc = 20 texts, the first Np (1..6) relevant, ranked at random, cut at K (1..10)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        Np, K = int(rng.integers(1, 7)), int(rng.integers(1, 11))
        rank = rng.permutation(20)
        rows.append({"id": f"q{i}", "E": "e", "Nc": 20, "Np": Np, "K": K, "rank": rank.tolist(),
                     "inK": (rank[:K] < Np).astype(np.int64).tolist()})
    return pl.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_per_sample_measures_match_ir_measures_and_the_evaluator(seed):
    samples = _random_samples(seed)
    features = add_features(samples.drop("rank"))
    for row, feature in zip(samples.iter_rows(named=True), features.iter_rows(named=True), strict=True):
        qrels = [ir_measures.Qrel(row["id"], f"d{d}", 1) for d in range(row["Np"])]
        run = [ir_measures.ScoredDoc(row["id"], f"d{d}", 100.0 - r) for r, d in enumerate(row["rank"])]
        k = row["K"]
        expected = ir_measures.calc_aggregate([ir_measures.RR @ k, ir_measures.AP @ k, ir_measures.nDCG @ k],
                                              qrels, run)
        mine = ranked_metrics([f"d{d}" for d in row["rank"]], {f"d{d}": 1 for d in range(row["Np"])}, k)
        for name, reference in (("RR@K", ir_measures.RR @ k), ("AP@K", ir_measures.AP @ k),
                                ("nDCG@K", ir_measures.nDCG @ k)):
            assert feature[name] == pytest.approx(expected[reference], abs=1e-12), (name, row)
            assert mine[name] == pytest.approx(feature[name], abs=1e-12), (name, row)


def test_undefined_not_zero_without_positives():
    sample = pl.DataFrame({"id": ["q"], "E": ["e"], "Nc": [5], "Np": [0], "K": [3], "inK": [[0, 0, 0]]})
    features = add_features(sample)
    assert features["RR@K"].null_count() == 1 and features["AP@K"].null_count() == 1


def test_one_vocabulary():
    assert METRIC_NAMES == RANKED_LIST_MEASURES
    assert set(RANKED_LIST_MEASURES) <= set(MEASURES)
    assert {"RR@K", "AP@K", "nDCG@K"} <= {name for name, m in MEASURES.items() if m.correlatable}
    assert all(m.has_alpha == ("alpha" in m.parameters) for m in MEASURES.values())
