"""The verdict on constructed data whose answer is known (decide/verdict.py, decide/summary.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from retrieval_response.analysis.measures import MEASURES, alpha_grid
from retrieval_response.decide.summary import verdict_text
from retrieval_response.decide.verdict import (
    COLUMNS,
    distinct_order_alphas,
    max_t_adjust,
    queries_needed,
    verdict_table,
)
from retrieval_response.testing.synthetic import graded_by_driver

pytestmark = pytest.mark.unit

OPTIONS = {"alpha_grid": "l350^0.95", "min_segment_samples": 15, "bootstrap_resamples": 200, "seed": 0}


def _decisions(verdict: pl.DataFrame, segment: str) -> dict[str, str]:
    rows = verdict.filter(pl.col("segment") == segment)
    return dict(zip(rows["measure"], rows["decision"], strict=True))


@pytest.fixture(scope="module")
def verdicts() -> dict[str, pl.DataFrame]:
    return {driver: verdict_table(graded_by_driver(100, driver, seed=3), **OPTIONS)
            for driver in ("recall", "precision", "random")}


def test_the_table_has_the_columns_and_one_row_per_family_and_measure(verdicts):
    verdict = verdicts["recall"]
    assert tuple(verdict.columns) == COLUMNS
    assert set(verdict["segment"]) == {"narrow", "wide", "all"}
    families = verdict.group_by("target", "subset", "E", "segment").len()
    assert families["len"].n_unique() == 1
    assert verdict.filter(pl.col("decision") == "best").height == families.height
    assert set(verdict["decision"]) <= {"best", "tied", "worse", "undecided"}


@pytest.mark.parametrize(("driver", "loser", "winner"), [("recall", "P", "R"), ("precision", "R", "P")])
def test_grades_driven_by_one_measure_make_the_other_worse_and_never_it(verdicts, driver, loser, winner):
    verdict = verdicts[driver]
    for segment in ("wide", "all"):
        assert _decisions(verdict, segment)[loser] == "worse", segment
    assert "worse" not in verdict.filter(pl.col("measure") == winner)["decision"].to_list()


def test_a_worse_measure_has_a_simultaneous_interval_above_zero_and_a_small_adjusted_p(verdicts):
    worse = verdicts["recall"].filter(pl.col("decision") == "worse")
    assert worse.height > 0
    assert (worse["diff_ci_low"] > 0).all() and (worse["p_adjusted"] < 0.05).all()
    tied = verdicts["recall"].filter(pl.col("decision") == "tied")
    assert ((tied["diff_ci_low"] <= 0) & (tied["p_adjusted"] >= 0.05)).all()


def test_random_grades_make_no_measure_worse(verdicts):
    assert "worse" not in verdicts["random"]["decision"].to_list()


def test_perfect_rankings_decide_nothing_and_say_why():
    graded = graded_by_driver(60, "random", seed=1, perfect=True, designs=((10, 2, (1, 2)),))
    verdict = verdict_table(graded, **OPTIONS)
    assert set(verdict["decision"]) == {"undecided"}
    assert verdict["reason"].null_count() == 0
    reasons = " ".join(verdict["reason"])
    assert "constant" in reasons and "orders the samples exactly as" in reasons
    text = verdict_text(verdict)
    assert ": best " not in text
    assert text.count("cannot decide") + text.count("undecided") >= 3


def test_a_measure_ordering_the_samples_as_another_is_undecided_and_names_it():
    graded = graded_by_driver(60, "recall", seed=2, designs=((10, 2, (3,)), (10, 4, (3,))))
    graded = graded.filter(pl.col("Np") == 2)
    verdict = verdict_table(graded, **OPTIONS).filter(pl.col("segment") == "all")
    same = verdict.filter(pl.col("same_as").is_not_null())
    assert {"T", "P", "R"} <= set(same["measure"]) | set(same["same_as"])
    assert same["reason"].str.contains("one \\(K, Np\\) = \\(3, 2\\)").all()


def test_a_target_with_one_value_and_too_few_queries_are_reasons_for_the_whole_family():
    graded = graded_by_driver(40, "recall", seed=4).with_columns(grade=pl.lit(4, pl.Int64))
    verdict = verdict_table(graded, **OPTIONS)
    assert set(verdict["decision"]) == {"undecided"}
    assert verdict["reason"].str.contains("takes one value").all()
    few = verdict_table(graded_by_driver(6, "recall", seed=4), **OPTIONS | {"min_segment_samples": 2})
    assert few["reason"].str.contains("only 6 queries").all()


def test_erag_at_k_1_is_circular():
    graded = graded_by_driver(40, "recall", seed=5, designs=((10, 2, (1,)),))
    utility = graded["inK"].list.eval(pl.element().cast(pl.Float64) * 0.5 + 0.25)
    verdict = verdict_table(graded.with_columns(erag_utility=utility), **OPTIONS)
    erag = verdict.filter(pl.col("measure").str.starts_with("eRAG"))
    assert erag.height > 0 and erag["reason"].str.contains("circular").all()


def test_the_interval_of_a_measure_with_alpha_carries_the_choice_of_alpha(verdicts):
    """Cross-fitted inside each resample: the point value is the cross-fitted one, at most the
    maximum over alpha on the same samples, and the interval is as wide as a fixed-alpha one."""
    rows = verdicts["recall"].filter(pl.col("measure") == "F", pl.col("segment") == "all").row(0, named=True)
    assert rows["ci_low"] < rows["value"] < rows["ci_high"]


def test_max_t_adjustment_controls_the_largest_of_several_null_differences():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(6, 2000)) + rng.normal(size=2000)
    values = np.zeros(6)
    p, half, critical = max_t_adjust(draws, values, 0.95)
    assert (p[np.triu_indices(6, 1)] > 0.5).all()
    assert critical > 1.96  # several pairs: wider than one pair's interval
    shifted = values.copy()
    shifted[0] = 5 * np.sqrt(2)
    p, _, _ = max_t_adjust(draws + shifted[:, None], shifted, 0.95)
    assert (p[0, 1:] < 0.01).all() and (p[1:, 1:][np.triu_indices(5, 1)] > 0.5).all()


@pytest.mark.parametrize(("half", "queries", "difference", "expected"), [
    (0.2, 100, 0.1, 400), (0.2, 100, 0.05, 1600), (0.05, 100, 0.1, 25), (float("nan"), 100, 0.1, None)])
def test_queries_needed_scales_the_half_width_as_one_over_root_queries(half, queries, difference, expected):
    assert queries_needed(half, queries, difference) == expected


def test_the_distinct_order_grid_keeps_every_value_of_a_rank_correlation_curve():
    rng = np.random.default_rng(1)
    n_p = rng.integers(0, 5, 40)
    K = rng.integers(1, 9, 40)
    n_p = np.minimum(n_p, K)
    features = {"n_p": n_p, "K": K, "Np": np.full(40, 4)}
    grid = alpha_grid("l350^0.95")
    kept = distinct_order_alphas(MEASURES["F"], features, grid, "exact")
    assert 1 < len(kept) < len(grid) and np.all(np.diff(kept) > 0)
    values = MEASURES["F"].evaluate(features, grid, "exact")
    orders = {tuple(np.unique(v, return_inverse=True)[1]) for v in values}
    assert len(orders) == len(kept)
