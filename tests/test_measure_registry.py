"""The one vocabulary of measures: the analysis' per-sample RR@K, AP@K and nDCG@K agree with trec_eval (through
ir_measures) on random graded samples, are undefined without positives, and the registry describes every measure."""

import ir_measures
import numpy as np
import polars as pl
import pytest

from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES

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
def test_per_sample_measures_match_ir_measures(seed):
    samples = _random_samples(seed)
    features = add_features(samples.drop("rank"))
    for row, feature in zip(samples.iter_rows(named=True), features.iter_rows(named=True), strict=True):
        qrels = [ir_measures.Qrel(row["id"], f"d{d}", 1) for d in range(row["Np"])]
        run = [ir_measures.ScoredDoc(row["id"], f"d{d}", 100.0 - r) for r, d in enumerate(row["rank"])]
        k = row["K"]
        expected = ir_measures.calc_aggregate([ir_measures.RR @ k, ir_measures.AP @ k, ir_measures.nDCG @ k],
                                              qrels, run)
        for name, reference in (("RR@K", ir_measures.RR @ k), ("AP@K", ir_measures.AP @ k),
                                ("nDCG@K", ir_measures.nDCG @ k)):
            assert feature[name] == pytest.approx(expected[reference], abs=1e-12), (name, row)


def test_undefined_not_zero_without_positives():
    sample = pl.DataFrame({"id": ["q"], "E": ["e"], "Nc": [5], "Np": [0], "K": [3], "inK": [[0, 0, 0]]})
    features = add_features(sample)
    for name in ("RR@K", "AP@K", "nDCG@K"):
        assert features[name].null_count() == 1, name
    assert features["nDCG"][0] == 0.0  # the paper's nDCG: 0 without a positive retrieved


def test_every_registry_entry_is_described_and_evaluated_on_its_features():
    """Each measure states its formula, names the features it reads and, evaluated on them, gives
    one value per sample (a row per alpha for the measures with alpha)."""
    samples = add_features(_random_samples(5).drop("rank"), None).with_columns(np_2K=pl.col("Np"))
    alpha = np.array([0.0, 0.5, 1.0])
    for name, measure in MEASURES.items():
        if measure.needs:
            continue  # built from document judgments: tests/test_document_judgments.py
        assert measure.description and "=" in measure.description, name
        assert measure.has_alpha == ("alpha" in measure.parameters)
        values = measure.evaluate({c: samples[c].to_numpy() for c in measure.features}, alpha)
        assert values.shape == ((len(alpha) if measure.has_alpha else 1), samples.height), name
