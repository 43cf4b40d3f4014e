"""The judge beside the answer (decide/judge_check.py) and the verdict's candidates."""

from __future__ import annotations

import polars as pl
import pytest

from retrieval_response.decide.judge_check import WEAK_BELOW, is_weak, judge_checks, with_judge_checks
from retrieval_response.decide.summary import screen
from retrieval_response.decide.verdict import verdict_candidates, verdict_table
from retrieval_response.infra.errors import InputError
from retrieval_response.testing.synthetic import graded_by_driver

pytestmark = pytest.mark.unit

OPTIONS = {"alpha_grid": "linear:21", "min_segment_samples": 15, "bootstrap_resamples": 200, "seed": 0}


def _umbrela(kappa, low, high) -> pl.DataFrame:
    return pl.DataFrame({"subset": ["S"], "kappa": [kappa], "kappa_ci_low": [low], "kappa_ci_high": [high]})


def _judge(auc, low, high) -> pl.DataFrame:
    return pl.DataFrame({"subset": ["S"], "auc_grade": [auc], "auc_grade_ci_low": [low], "auc_grade_ci_high": [high]})


@pytest.mark.parametrize(("statistic", "low", "weak"), [("kappa", 0.39, True), ("kappa", 0.41, False),
                                                        ("AUC", 0.59, True), ("AUC", 0.61, False),
                                                        ("alpha", 0.2, True), ("alpha", 0.5, False)])
def test_a_check_is_weak_when_its_interval_reaches_below_the_threshold(statistic, low, weak):
    check = {"statistic": statistic, "value": low + 0.1, "ci_low": low, "ci_high": low + 0.2}
    assert is_weak(check) is weak
    assert is_weak(check | {"ci_low": None}) is (low + 0.1 < WEAK_BELOW[statistic])


@pytest.fixture(scope="module")
def verdict() -> pl.DataFrame:
    return verdict_table(graded_by_driver(60, "recall", seed=3), **OPTIONS)


def test_every_row_of_a_family_carries_its_targets_check_and_a_weak_one_is_said_once(verdict):
    checks = judge_checks(judge=_judge(0.64, 0.55, 0.72), human=None)
    checked = with_judge_checks(verdict, checks)
    assert checked.columns == verdict.columns and checked.height == verdict.height
    grade = checked.filter(pl.col("target") == "grade")
    assert set(grade["judge_check"]) == {"grade AUC 0.64 [0.55, 0.72] vs answer_contains"}
    assert grade["judge_weak"].all()
    text = screen(checked, "paths")
    assert text.count("The verdict rests on a weak judge") == 1 and "grade AUC 0.64 [0.55, 0.72]" in text
    strong = with_judge_checks(verdict, judge_checks(judge=_judge(0.8, 0.7, 0.9)))
    assert not strong["judge_weak"].any() and "weak judge" not in screen(strong, "paths")


def test_the_umbrela_check_joins_only_a_family_whose_recommended_measure_needs_its_labels(verdict):
    checks = judge_checks(umbrela=_umbrela(0.54, 0.40, 0.68))
    checked = with_judge_checks(verdict, checks)
    recommended = checked.filter(pl.col("recommended"))
    assert not recommended["measure"].str.ends_with("_umbrela").any()
    assert checked["judge_check"].null_count() == checked.height
    as_if = verdict.with_columns(measure=pl.when(pl.col("recommended")).then(pl.lit("P_umbrela"))
                                 .otherwise(pl.col("measure")))
    joined = with_judge_checks(as_if, checks).filter(pl.col("recommended"))
    assert set(joined["judge_check"]) == {"UMBRELA kappa 0.54 [0.40, 0.68] vs qrels"}


def test_checks_without_a_value_are_left_out():
    assert judge_checks(umbrela=_umbrela(None, None, None), judge=_judge(float("nan"), None, None)).height == 0


def test_the_candidates_are_the_computed_measures_of_the_list_and_are_recorded():
    graded = graded_by_driver(60, "recall", seed=3)
    names = verdict_candidates(graded, ["R", "P", "T", "UDCG"])
    assert names == ["T", "P", "R"]  # registry order; UDCG has no judgments here
    verdict = verdict_table(graded, measures=names, **OPTIONS)
    assert set(verdict["candidates"]) == {"T, P, R"} and set(verdict["measure"]) == {"T", "P", "R"}
    with pytest.raises(InputError, match="verdict.candidates.*not measures of the registry: nDCG@10"):
        verdict_candidates(graded, ["P", "nDCG@10"])


def test_fewer_candidates_give_a_smaller_critical_value(verdict):
    graded = graded_by_driver(60, "recall", seed=3)
    few = verdict_table(graded, measures=["P", "R", "nDCG"], **OPTIONS)
    for segment in ("wide", "all"):
        every = verdict.filter(segment=segment, target="grade")["critical"].drop_nulls().max()
        three = few.filter(segment=segment, target="grade")["critical"].drop_nulls().max()
        assert three < every, segment
