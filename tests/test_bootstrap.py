"""Query-id bootstrap: resampling, weighted tables, reproducibility, interval sanity."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from conftest import benchmark
from retrieval_response.analysis.bootstrap import (
    percentile_interval,
    resample_weights,
    resampled_tables,
    share_positive,
)
from retrieval_response.analysis.correlation_tables import analysis_tables

pytestmark = pytest.mark.unit

bench = benchmark("analysis")


def test_resample_weights_stay_within_strata_and_are_reproducible():
    strata = np.array(["A", "A", "A", "B", "B", "C"])
    weights = resample_weights(strata, 50, seed=7)
    assert weights.shape == (50, 6)
    assert (weights[:, :3].sum(axis=1) == 3).all() and (weights[:, 3:5].sum(axis=1) == 2).all()
    assert (weights[:, 5] == 1).all()
    assert np.array_equal(weights, resample_weights(strata, 50, seed=7))
    assert not np.array_equal(weights, resample_weights(strata, 50, seed=8))


def test_resampled_tables_equal_weighted_counts():
    rng = np.random.default_rng(1)
    query, cell, grade = rng.integers(0, 6, 200), rng.integers(0, 9, 200), rng.integers(0, 5, 200)
    weights = rng.integers(0, 3, size=(4, 6)).astype(float)
    tables = resampled_tables(weights, query, cell, grade, 9, 5)
    for r in range(4):
        expected = np.zeros((9, 5))
        np.add.at(expected, (cell, grade), weights[r, query])
        assert np.array_equal(tables[r], expected)


def test_interval_and_share_positive_ignore_nan():
    samples = np.array([[1.0, 2.0, 3.0, np.nan, 4.0], [np.nan] * 5])
    low, high = percentile_interval(samples, 0.5)
    assert low[0] == pytest.approx(1.75) and high[0] == pytest.approx(3.25)
    assert np.isnan(low[1]) and np.isnan(high[1])
    assert share_positive(np.array([[-1.0, 1.0, 2.0, np.nan], [np.nan] * 4])).tolist()[0] == pytest.approx(2 / 3)


@pytest.fixture(scope="module")
def graded():
    return bench.synthetic_graded(12000, seed=5)


def analyse(graded, seed):
    return analysis_tables(
        graded, segmentation="fit", alpha_grid="l30^0.8", min_segment_samples=200, bootstrap_resamples=300, seed=seed,
        measures=["F", "F_e", "T", "T_u", "nDCG"],
    )[:2]


@pytest.fixture(scope="module")
def seeded(graded):
    """The correlation and difference tables of seed 11."""
    return analyse(graded, seed=11)


def test_bootstrap_is_reproducible_and_covers_the_estimate(graded, seeded):
    correlations, differences = seeded
    again, again_differences = analyse(graded, seed=11)
    assert correlations.equals(again) and differences.equals(again_differences)
    other, _ = analyse(graded, seed=12)
    assert not correlations["ci_low"].equals(other["ci_low"])

    defined = correlations.drop_nulls("value")
    assert len(defined) > 100
    assert (defined["ci_low"] <= defined["ci_high"]).all()
    # well-behaved synthetic data: the interval contains the full-data estimate
    inside = (defined["ci_low"] <= defined["value"]) & (defined["value"] <= defined["ci_high"])
    assert inside.mean() > 0.95
    # the non-alpha measure has no optimisation bias, so it is always inside
    ndcg = defined.filter(pl.col("measure") == "nDCG")
    assert ((ndcg["ci_low"] <= ndcg["value"]) & (ndcg["value"] <= ndcg["ci_high"])).all()


def test_differences_are_paired_and_consistent_with_correlations(seeded):
    correlations, differences = seeded
    assert set(differences["difference"].unique()) == {"nDCG-F", "nDCG-T", "T-F", "F_e-F", "T_u-T"}
    keys = ["E", "subset", "segment", "corr_type"]
    value = correlations.pivot(on="measure", index=keys, values="value")
    joined = differences.filter(pl.col("difference") == "T-F").join(value, on=keys)
    assert np.allclose(joined["value"].to_numpy(), (joined["T"] - joined["F"]).to_numpy(), atol=1e-12)
    assert differences["share_positive"].is_between(0, 1).all()
    assert (differences["ci_low"] <= differences["ci_high"]).all()
