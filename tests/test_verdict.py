"""The verdict on constructed data whose answer is known (decide/verdict.py, decide/summary.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from retrieval_response.analysis.crossfit_bootstrap import distinct_order_alphas
from retrieval_response.analysis.samples import segment_table
from retrieval_response.analysis.segments import NO_SAMPLE_WITH_MEASURE, VERDICT_SEGMENTATIONS
from retrieval_response.decide.comparisons import all_pairs, best_comparisons
from retrieval_response.decide.reasons import REASONS, short_reason
from retrieval_response.decide.summary import p_value, screen, verdict_text
from retrieval_response.decide.verdict import (
    COLUMNS,
    queries_needed,
    recommend,
    verdict_table,
)
from retrieval_response.infra.errors import InputError
from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.registry import MEASURES
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


def test_the_table_has_the_columns_and_one_recommendation_per_decided_family(verdicts):
    verdict = verdicts["recall"]
    assert tuple(verdict.columns) == COLUMNS
    assert set(verdict["segment"]) == {"narrow", "wide", "all"}
    families = verdict.group_by("target", "subset", "E", "segment").agg(
        pl.len(), pl.col("recommended").sum().alias("recommended"), (pl.col("decision") != "undecided").sum())
    assert families["len"].n_unique() == 1
    assert (families["recommended"] == (families["decision"] > 0).cast(pl.UInt32)).all()
    assert set(verdict["decision"]) <= {"possibly best", "worse", "undecided"}
    floats = verdict.select(pl.col(pl.Float64))
    assert not any(floats[c].is_nan().any() for c in floats.columns)
    assert (verdict["reason_code"].drop_nulls().is_in(list(REASONS))).all()
    assert verdict.filter(pl.col("decision") == "undecided")["reason_code"].null_count() == 0


@pytest.mark.parametrize(("driver", "loser", "winner"), [("recall", "P", "R"), ("precision", "R", "P")])
def test_grades_driven_by_one_measure_make_the_other_worse_and_never_it(verdicts, driver, loser, winner):
    verdict = verdicts[driver]
    for segment in ("wide", "all"):
        assert _decisions(verdict, segment)[loser] == "worse", segment
    assert "worse" not in verdict.filter(pl.col("measure") == winner)["decision"].to_list()


def test_a_worse_measure_has_an_interval_at_or_below_zero_and_a_small_step_down_p(verdicts):
    compared = verdicts["recall"].filter(pl.col("decision") != "undecided")
    worse = compared.filter(pl.col("decision") == "worse")
    assert worse.height > 0
    assert (worse["mcb_high"] == 0).all() and (worse["p_worse"] < 0.05).all() and (worse["margin"] > 0).all()
    possible = compared.filter(pl.col("decision") == "possibly best")
    assert (possible["p_worse"] >= 0.05).all()
    assert (compared["mcb_low"] <= 0).all() and (compared["margin"] == -compared["mcb_low"]).all()
    assert ((compared["p_worse"] * (1 + compared["resamples"])).round(6) % 1 == 0).all()


def test_random_grades_make_no_measure_worse(verdicts):
    assert "worse" not in verdicts["random"]["decision"].to_list()


def _direct_mcb(values: np.ndarray, draws: np.ndarray, level: float):
    """Hsu's constrained MCB with a bootstrap critical value, written out pair by pair."""
    m, R = draws.shape
    se = {(i, j): np.std(draws[i] - draws[j], ddof=1) for i in range(m) for j in range(m) if i != j}
    alpha = 1 - level
    k = max(k for k in range(R) if (1 + k) / (1 + R) < alpha)
    critical = 0.0
    for b in range(m):
        stat = [max(((draws[j, r] - draws[b, r]) - (values[j] - values[b])) / se[j, b] for j in range(m) if j != b)
                for r in range(R)]
        critical = max(critical, sorted(stat, reverse=True)[k])
    worse = [any(values[j] - values[i] > critical * se[i, j] for j in range(m) if j != i) for i in range(m)]
    best_set = [i for i in range(m) if not worse[i]]
    high = [0.0 if worse[i] else max(0.0, min(values[i] - values[j] + critical * se[i, j] for j in range(m) if j != i))
            for i in range(m)]
    low = [0.0 if best_set == [i] else min(0.0, min(values[i] - values[j] - critical * se[i, j]
                                                    for j in best_set if j != i)) for i in range(m)]
    return critical, np.array(low), np.array(high), np.array(worse)


def _direct_step_down(values: np.ndarray, draws: np.ndarray, level: float) -> np.ndarray:
    """Romano-Wolf step-down over the ordered pairs "j better than i", written out step by step:
    the measures some measure is decided strictly better than."""
    m, R = draws.shape
    pairs = [(j, i) for j in range(m) for i in range(m) if i != j]
    se = {(j, i): np.std(draws[j] - draws[i], ddof=1) for j, i in pairs}
    t = {(j, i): (values[j] - values[i]) / se[j, i] for j, i in pairs}
    star = {(j, i): ((draws[j] - draws[i]) - (values[j] - values[i])) / se[j, i] for j, i in pairs}
    k = max(k for k in range(R) if (1 + k) / (1 + R) < 1 - level)
    active, rejected = set(pairs), set()
    while active:
        maxima = np.max([star[pair] for pair in active], axis=0)
        critical = sorted(maxima, reverse=True)[k]
        new = {pair for pair in active if t[pair] > critical}
        if not new:
            break
        rejected |= new
        active -= new
    return np.array([any((j, i) in rejected for j in range(m) if j != i) for i in range(m)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mcb_intervals_equal_a_direct_computation_on_a_small_case(seed):
    rng = np.random.default_rng(seed)
    values = np.array([0.40, 0.36, 0.30, 0.12])
    draws = values[:, None] + rng.normal(size=(4, 150)) * 0.05 + rng.normal(size=150) * 0.04
    result = best_comparisons(values, draws, 0.95)
    critical, low, high, worse = _direct_mcb(values, draws, 0.95)
    assert result.critical == pytest.approx(critical, rel=1e-12)
    np.testing.assert_allclose(result.low, low, atol=1e-12)
    np.testing.assert_allclose(result.high, high, atol=1e-12)
    assert ((result.high == 0) == worse).all() and worse[3] and not worse[0]
    assert (result.worse == _direct_step_down(values, draws, 0.95)).all() and result.worse[3]
    assert ((result.p < 0.05) == result.worse).all() and not (result.worse & (result.high > 0)).any()


def test_two_measures_with_the_same_draws_bound_each_other_by_their_difference():
    """Draws that do not spread between two measures (T and T_u ordering every resample alike)
    leave their difference known exactly: every margin stays finite and one measure is recommended."""
    rng = np.random.default_rng(6)
    values = np.array([0.40, 0.41, 0.10])
    draws = values[:, None] + rng.normal(size=(3, 200)) * 0.04
    draws[1] = draws[0] + 0.01
    result = best_comparisons(values, draws, 0.95)
    assert np.isfinite(result.margin).all() and result.worse[2]
    assert result.margin[1] == pytest.approx(0.0) and result.margin[0] == pytest.approx(0.01)
    assert recommend(["T", "T_u", "P"], result) in (0, 1)


def test_mcb_is_narrower_than_all_pairs_on_the_same_draws():
    rng = np.random.default_rng(4)
    values = np.linspace(0.4, 0.3, 12)
    draws = values[:, None] + rng.normal(size=(12, 400)) * 0.05 + rng.normal(size=400) * 0.05
    _, _, all_pairs_critical = all_pairs(values, draws, 0.95)
    assert best_comparisons(values, draws, 0.95).critical < all_pairs_critical


def test_the_recommendation_goes_to_the_cheaper_of_measures_tied_within_monte_carlo_error():
    """R (needs Np) and P (relevance alone) with margins 0.002 apart, far within the Monte Carlo
    error of margins near 0.1 from 300 resamples: P is recommended; a clearly larger margin is
    never tied."""
    rng = np.random.default_rng(5)
    common = rng.normal(size=(1, 300)) * 0.05
    values = np.array([0.400, 0.399, 0.25])
    draws = values[:, None] + common + rng.normal(size=(3, 300)) * 0.03
    result = best_comparisons(values, draws, 0.95)
    assert result.tied_with_smallest().tolist() == [True, True, False]
    assert recommend(["R", "P", "T"], result) == 1
    assert recommend(["P", "R", "T"], result) == 0
    assert recommend(["eRAG_P", "UDCG", "T"], result) == 0  # same cost: the smaller margin


def test_perfect_rankings_decide_nothing_and_say_why():
    graded = graded_by_driver(60, "random", seed=1, perfect=True, designs=((10, 2, (1, 2)),))
    verdict = verdict_table(graded, **OPTIONS)
    assert set(verdict["decision"]) == {"undecided"}
    assert verdict["reason"].null_count() == 0
    reasons = " ".join(verdict["reason"])
    assert "constant" in reasons and "orders the samples exactly as" in reasons
    text = verdict_text(verdict)
    assert ": monitor " not in text
    assert text.count("cannot decide") + text.count("undecided") >= 3


def test_a_measure_ordering_the_samples_as_another_is_undecided_and_names_it():
    graded = graded_by_driver(60, "recall", seed=2, designs=((10, 2, (3,)), (10, 4, (3,))))
    graded = graded.filter(pl.col("Np") == 2)
    verdict = verdict_table(graded, **OPTIONS).filter(pl.col("segment") == "all")
    same = verdict.filter(pl.col("same_as").is_not_null())
    assert {"T", "P", "R"} <= set(same["measure"]) | set(same["same_as"])
    assert not same.filter(pl.col("measure").is_in(["T", "F", "R", "T_u"]))["same_as"].is_in(["T", "F", "T_u"]).any()
    counts = same.filter(pl.col("measure").is_in(["T", "F", "R", "P"]))
    assert counts["reason"].str.contains("one \\(K, Np\\) = \\(3, 2\\)").all()
    positional = same.filter(pl.col("measure").is_in(["AP@K", "nDCG@K", "RR@K"]))
    assert not positional["reason"].str.contains("positives in the top K alone").any()


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


def test_all_pairs_adjustment_controls_the_largest_of_several_null_differences():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(6, 2000)) + rng.normal(size=2000)
    values = np.zeros(6)
    p, half, critical = all_pairs(values, draws, 0.95)
    assert (p[np.triu_indices(6, 1)] > 0.5).all()
    assert critical > 1.96  # several pairs: wider than one pair's interval
    shifted = values.copy()
    shifted[0] = 5 * np.sqrt(2)
    p, _, _ = all_pairs(values + shifted, draws + shifted[:, None], 0.95)
    assert (p[0, 1:] < 0.01).all() and (p[1:, 1:][np.triu_indices(5, 1)] > 0.5).all()


@pytest.mark.parametrize(("p", "resamples", "printed"), [(10 / 201, 200, "0.0498"), (1 / 201, 200, "0.0050"),
                                                          (0.5, 1000, "0.50000"), (51 / 1001, 1000, "0.05095")])
def test_a_p_value_is_printed_with_the_resolution_of_its_resamples(p, resamples, printed):
    assert p_value(p, resamples) == printed


@pytest.mark.parametrize(("differences", "ses", "critical", "queries", "margin", "expected"), [
    ([0.0], [0.1], 2.0, 100, 0.1, 808), ([0.0], [0.1], 2.0, 100, 0.05, 3230), ([-0.05], [0.1], 2.0, 100, 0.1, 359),
    ([0.0, -0.05], [0.1, 0.2], 2.0, 100, 0.1, 1436), ([0.0], [0.01], 2.0, 100, 0.1, 10),
    ([0.06], [0.1], 2.0, 100, 0.05, None), ([], [], 2.0, 100, 0.1, None), ([0.0], [0.0], 2.0, 100, 0.1, None),
    ([0.0], [0.1], float("nan"), 100, 0.1, None)])
def test_queries_needed_brings_every_bounding_term_to_the_margin_with_80_percent_power(
        differences, ses, critical, queries, margin, expected):
    """Q_j = Q ((c + 0.8416) se_j / (margin - d_j))^2, the largest, at least MIN_QUERIES (10)."""
    assert queries_needed(np.array(differences), np.array(ses), critical, queries, margin) == expected


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


def test_the_end_of_a_run_prints_the_verdict_unless_it_is_older_than_the_analysis(tmp_path, capsys):
    import os

    from retrieval_response.decide.summary import announce_verdict

    verdict = verdict_table(graded_by_driver(30, "recall", seed=6), **OPTIONS)
    table, graded = tmp_path / "verdict.parquet", tmp_path / "graded.parquet"
    announce_verdict(table, graded)
    assert capsys.readouterr().err == ""
    verdict.write_parquet(table)
    graded.write_text("older")
    os.utime(graded, (1, 1))
    announce_verdict(table, graded)
    err = capsys.readouterr().err
    assert "grade | S | X: monitor " in err and len(err.splitlines()) <= 25
    os.utime(graded, None)
    os.utime(table, (1, 1))
    announce_verdict(table, graded)
    err = capsys.readouterr().err
    assert "older than the analysis table" in err and "grade | S | X" not in err


def test_the_screen_says_a_reason_shared_by_several_families_once(verdicts):
    text = screen(verdicts["recall"], "paths")
    assert text.splitlines()[-1] == "paths"
    families = verdicts["recall"].filter(pl.col("segment") == "all")
    same = families.filter(pl.col("same_as").is_not_null())
    for same_as, rows in same.group_by("same_as"):
        n = rows.select("target", "subset", "E").unique().height
        if n > 1:
            line = next(line for line in text.splitlines() if line.endswith(f"the samples as {same_as[0]}"))
            assert line.startswith(f"in {n} families ") and set(rows["measure"]) <= set(line.replace(",", "").split(" ")[3:])
            assert sum(f"the samples as {same_as[0]}" in line for line in text.splitlines()) == 1


@pytest.mark.parametrize("draws", [np.full((2, 50), np.nan), np.tile([[0.3], [0.0]], (1, 50))])
def test_a_statistic_without_spread_on_the_resamples_is_never_significant(draws):
    from retrieval_response.analysis.bootstrap import max_t

    p, half, _ = max_t(np.array([0.3, 0.0]), draws)
    assert (p == 1).all() and np.isnan(half).all()


def test_too_few_resamples_leave_the_family_undecided():
    verdict = verdict_table(graded_by_driver(60, "recall", seed=3), **OPTIONS | {"bootstrap_resamples": 20})
    assert set(verdict["decision"]) == {"undecided"}
    assert verdict["reason"].str.contains("20 bootstrap resamples").all()


def test_a_sample_judged_in_part_leaves_the_verdict_and_the_judgment_measure_is_compared():
    """UMBRELA labels 3 on positives, 0 on negatives; one sample of five has a text without a
    label (at K = 1 its only one). The verdict drops those samples (and says how many) instead of
    leaving T_umbrela undecided for being defined on other samples."""
    graded = graded_by_driver(60, "precision", seed=4)
    labels = graded["inK"].list.eval(pl.element().cast(pl.Int8) * 3)
    partly = pl.Series([i % 5 == 0 for i in range(graded.height)])  # K = 1: no label at all
    labels = pl.Series([[None, *ls[1:]] if p else ls for ls, p in zip(labels.to_list(), partly, strict=True)],
                       dtype=pl.List(pl.Int8))
    verdict = verdict_table(graded.with_columns(umbrela_label=labels), **OPTIONS)
    assert (verdict["samples_left_out"] == partly.sum()).all()
    assert f"{partly.sum()} samples of S | X left out" in verdict_text(verdict)
    rows = verdict.filter(pl.col("segment") == "all", pl.col("target") == "grade")
    assert rows["n_samples"].drop_nulls().max() == graded.height - partly.sum()
    umbrela = rows.filter(pl.col("measure") == "P_umbrela").row(0, named=True)
    assert umbrela["decision"] != "undecided" or umbrela["same_as"] is not None, umbrela["reason"]
    judged = rows.filter(pl.col("measure").str.ends_with("_umbrela"))
    assert judged.height == 3 and not judged["reason"].drop_nulls().str.starts_with("defined on").any()


def test_the_verdict_leaves_out_what_the_segments_table_leaves_out_with_its_reason():
    graded = graded_by_driver(60, "recall", seed=3)
    options = {k: v for k, v in OPTIONS.items() if k != "min_segment_samples"} | {"bootstrap_resamples": 100}
    segments = {s: segment_table(graded, segmentation=s, min_segment_samples=15) for s in VERDICT_SEGMENTATIONS}
    assert_frame_equal(verdict_table(graded, segments=segments, **options),
                       verdict_table(graded, min_segment_samples=15, **options))
    left_out = segments["all"].with_columns(
        kept=pl.when(pl.col("measure") == "P").then(False).otherwise(pl.col("kept")),
        reason=pl.when(pl.col("measure") == "P").then(pl.lit("n < 999: left out by the table")).otherwise(pl.col("reason")))
    verdict = verdict_table(graded, segments=segments | {"all": left_out}, **options)
    P = verdict.filter(pl.col("measure") == "P")
    assert P.filter(segment="all")["reason"].to_list() == ["n < 999: left out by the table"] * P.filter(segment="all").height
    assert P.filter(segment="all")["decision"].eq("undecided").all()
    assert not P.filter(pl.col("segment") != "all")["reason"].str.contains("left out by the table").any()


def test_a_segments_table_of_other_measures_is_refused_not_recounted():
    graded = graded_by_driver(30, "recall", seed=6)
    options = {k: v for k, v in OPTIONS.items() if k != "min_segment_samples"} | {"bootstrap_resamples": 100}
    segments = {s: segment_table(graded, segmentation=s, min_segment_samples=15, measures=["P", "R"])
                for s in VERDICT_SEGMENTATIONS}
    with pytest.raises(InputError, match="segments table"):
        verdict_table(graded, segments=segments, **options)


def test_a_measure_no_sample_has_is_not_computed_rather_than_too_small():
    """Judgments on one subset only (the study's arXiv has none): in the other, the judgment
    measures are left out as not computed, and a short segment still as too small."""
    judged = graded_by_driver(60, "precision", seed=4)
    labels = judged["inK"].list.eval(pl.element().cast(pl.Int8) * 3)
    unjudged = graded_by_driver(60, "precision", seed=5).with_columns(subset=pl.lit("U"))
    graded = pl.concat([judged.with_columns(umbrela_label=labels),
                        unjudged.with_columns(umbrela_label=pl.lit(None, pl.List(pl.Int8)))])
    segments = segment_table(graded, segmentation="all", min_segment_samples=15)
    reasons = segments.filter(pl.col("measure").str.ends_with("_umbrela")).group_by("subset").agg(pl.col("reason"))
    reasons = {row["subset"]: set(row["reason"]) for row in reasons.iter_rows(named=True)}
    assert reasons.pop("U") == {NO_SAMPLE_WITH_MEASURE + ": no sample of the segment has the measure (for a judgment measure: "
                                "no judgments of this subset's texts)"}
    assert all(r == {None} for r in reasons.values())
    small = segment_table(graded.head(10), segmentation="all", min_segment_samples=15)  # judged, too few
    assert small.filter(pl.col("measure").is_in(["P", "T", "T_umbrela"]))["reason"].str.starts_with("n < 15: ").all()
    verdict = verdict_table(graded, **OPTIONS)
    codes = verdict.filter(pl.col("subset") == "U", pl.col("measure").str.ends_with("_umbrela"))["reason_code"]
    assert set(codes) == {"not_computed"} and short_reason("not_computed") == NO_SAMPLE_WITH_MEASURE
