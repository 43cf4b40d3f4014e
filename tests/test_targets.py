"""Correlation targets: grade, grade_expected and the judge-free answer scores, end to end against scipy."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis_reference import anchor_reference, exact_sample_curves, random_graded, reference_first_max, scipy_curves
from retrieval_response.analysis.bootstrap import percentile_interval, resample_weights
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.crossfit import crossfit, query_halves
from retrieval_response.analysis.samples import default_targets
from retrieval_response.analysis.segments import assign_segments
from retrieval_response.analysis.targets import NAMES
from retrieval_response.infra.errors import InputError
from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES

pytestmark = pytest.mark.unit

GRID = alpha_grid("l12^0.7")
CORR = ["spearman", "pearson", "kendall_b", "kendall_c"]
KEYS = ["E", "subset", "segment"]


def with_targets(graded: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Add grade_expected (continuous, null where the grade is or at random), grade_gold (1..5, null
    without gold, i.e. where answer_f1 is null) and grade_gold_expected (continuous), answer_f1
    (many ties at 0 and 1, continuous otherwise, some null; constant 1.0 for embedder E2 on subset M),
    answer_recall (at least answer_f1 where F1 <= recall holds, some null) and answer_contains
    (boolean, true mostly where the recall is 1)."""
    rng = np.random.default_rng(seed)
    n = len(graded)
    grade = graded["grade"].cast(pl.Float64).to_numpy()
    expected = np.clip(grade + rng.normal(0, 0.4, n), 1, 5)
    expected[rng.random(n) < 0.1] = np.nan
    f1 = np.where(rng.random(n) < 0.3, np.round(rng.random(n)), rng.random(n))
    f1[rng.random(n) < 0.05] = np.nan
    recall = np.where(np.isnan(f1), np.nan, np.maximum(f1, np.round(rng.random(n) * 3) / 3))
    contains = np.where(recall == 1, rng.random(n) < 0.9, rng.random(n) < 0.05)
    gold_grade = np.where(np.isnan(f1), np.nan, np.clip(np.round(1 + 4 * np.nan_to_num(f1) + rng.normal(0, 0.7, n)), 1, 5))
    gold_expected = np.clip(gold_grade + rng.normal(0, 0.3, n), 1, 5)
    out = graded.with_columns(
        grade_expected=pl.Series(expected).fill_nan(None),
        grade_gold=pl.Series(gold_grade).fill_nan(None).cast(pl.Int8),
        grade_gold_expected=pl.Series(gold_expected).fill_nan(None),
        answer_f1=pl.Series(f1).fill_nan(None),
        answer_recall=pl.Series(recall).fill_nan(None),
        answer_contains=pl.when(pl.Series(np.isnan(recall))).then(None).otherwise(pl.Series(contains)),
    )
    constant = (pl.col("E") == "E2") & pl.col("id").str.starts_with("M-")
    return out.with_columns(answer_f1=pl.when(constant).then(pl.lit(1.0)).otherwise(pl.col("answer_f1")))


@pytest.fixture(scope="module")
def graded() -> pl.DataFrame:
    return with_targets(random_graded(seed=4, n_queries=90), seed=4)


def reference_rows(graded: pl.DataFrame, segmentation: str) -> pl.DataFrame:
    rows = assign_segments(add_features(graded), segmentation)
    queries = rows.select("id", "subset").unique("id").sort("id")
    half = dict(zip(queries["id"], query_halves(queries["id"].to_numpy(), queries["subset"].to_numpy(), 0), strict=True))
    return rows.with_columns(half_a=pl.col("id").replace_strict(half, return_dtype=pl.Boolean))


def test_continuous_targets_equal_scipy_reference(graded):
    measures = ["F", "T", "F_e_partner", "nDCG"]
    correlations, _, _ = analysis_tables(graded, segmentation="fit", alpha_grid=GRID, min_segment_samples=30,
                                   bootstrap_resamples=0, measures=measures)
    assert correlations["target"].unique(maintain_order=True).to_list() == [t for t in NAMES if t in graded.columns]
    rows = reference_rows(graded, "fit")
    checked = 0
    for (E, subset, segment), segment_rows in rows.group_by(KEYS):
        for target in ("grade_expected", "grade_gold", "grade_gold_expected", "answer_f1", "answer_recall",
                       "answer_contains"):
            for name in measures:
                measure = MEASURES[name]
                measured = segment_rows.drop_nulls(list(measure.features))
                used = measured.drop_nulls(target)
                got = correlations.filter(E=E, subset=subset, segment=segment, target=target, measure=name)
                if len(used) < 30:
                    assert got.height == 0
                    continue
                assert got["n_samples"].unique().to_list() == [len(used)]
                assert got["n_missing_target"].unique().to_list() == [len(measured) - len(used)]
                grid = GRID if measure.has_alpha else np.zeros(1)
                curves = {}
                for part, frame in (("full", used), ("a", used.filter("half_a")), ("b", used.filter(~pl.col("half_a")))):
                    features = {c: frame[c].to_numpy() for c in measure.features}
                    y = anchor_reference(frame[target].cast(pl.Float64).to_numpy())[0]
                    if measure.has_alpha:  # ties in exact arithmetic: near 0.7 and 0.3 cells cross within 4 ulps
                        curves[part] = exact_sample_curves(name, features, grid, y, CORR)
                    else:
                        curves[part] = scipy_curves(anchor_reference(measure.evaluate(features, grid)), y, CORR)
                for row in got.iter_rows(named=True):
                    curve = curves["full"][row["corr_type"]]
                    if np.isnan(curve).all():
                        assert row["value"] is None and row["null_reason"] is not None
                        continue
                    best, index = reference_first_max(curve)
                    assert row["value"] == pytest.approx(best, abs=1e-9) and row["null_reason"] is None
                    expected = crossfit(curves["a"][row["corr_type"]], curves["b"][row["corr_type"]])[0]
                    if measure.has_alpha:
                        assert row["alpha"] == GRID[index]
                        assert (row["value_crossfit"] is None) == bool(np.isnan(expected))
                        if not np.isnan(expected):
                            assert row["value_crossfit"] == pytest.approx(float(expected), abs=1e-9)
                    checked += 1
    assert checked >= 100


def test_constant_target_is_null_with_reason(graded):
    correlations, _, _ = analysis_tables(graded, segmentation="fit", alpha_grid=GRID, min_segment_samples=10,
                                   bootstrap_resamples=0, measures=["T", "P"], targets=["answer_f1"])
    constant = correlations.filter(E="E2", subset="M")
    assert constant.height > 0
    assert constant["value"].is_null().all() and constant["null_reason"].unique().to_list() == ["constant_target"]
    others = correlations.filter((pl.col("E") != "E2") | (pl.col("subset") != "M"))
    assert others["value"].is_not_null().all() and others["null_reason"].is_null().all()


def test_bootstrap_of_continuous_and_count_targets_equals_scipy_on_resamples(graded):
    resamples, seed = 15, 3
    correlations, differences, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid=GRID, min_segment_samples=40, bootstrap_resamples=resamples, seed=seed,
        measures=["T", "F"], targets=["grade", "grade_expected"], corr_types=["spearman", "kendall_c"],
    )
    rows = reference_rows(graded, "fit")
    queries = rows.select("id", "subset").unique("id").sort("id")
    weights = resample_weights(queries["subset"].to_numpy(), resamples, seed)
    multiplicity = {query_id: weights[:, q] for q, query_id in enumerate(queries["id"])}
    checked = 0
    for row in correlations.filter(pl.col("segment") == "wide").iter_rows(named=True):
        if row["value"] is None:
            continue
        frame = rows.filter(E=row["E"], subset=row["subset"], segment=row["segment"]).drop_nulls(row["target"])
        measure = MEASURES[row["measure"]]
        values = anchor_reference(measure.evaluate({c: frame[c].to_numpy() for c in measure.features},
                                                   np.array([row["alpha"]])))[0]
        y = anchor_reference(frame[row["target"]].to_numpy())[0]
        counts = np.stack([multiplicity[i] for i in frame["id"]], axis=1).astype(int)
        boot = np.array([scipy_curves(np.repeat(values, c)[None], np.repeat(y, c), [row["corr_type"]])[row["corr_type"]][0]
                         for c in counts])
        low, high = percentile_interval(boot[None], 0.95)
        assert row["ci_low"] == pytest.approx(low[0], abs=1e-9) and row["ci_high"] == pytest.approx(high[0], abs=1e-9)
        checked += 1
    assert checked >= 20
    assert set(differences["target"]) == {"grade", "grade_expected"}
    value = correlations.pivot(on="measure", index=[*KEYS, "target", "corr_type"], values="value")
    joined = differences.filter(difference="T-F").join(value, on=[*KEYS, "target", "corr_type"])
    assert np.allclose(joined["value"].to_numpy(), (joined["T"] - joined["F"]).to_numpy(), atol=1e-12, equal_nan=True)


def test_default_targets_are_the_columns_with_values(graded):
    assert default_targets(graded) == [t for t in NAMES if t in graded.columns]
    assert default_targets(graded.drop("answer_f1")) == ["grade", "grade_expected", "grade_gold", "grade_gold_expected",
                                                         "answer_recall", "answer_contains"]
    all_null = graded.with_columns(answer_f1=pl.lit(None, pl.Float64), grade_expected=pl.lit(float("nan")),
                                   grade_gold=pl.lit(None, pl.Int8), grade_gold_expected=pl.lit(None, pl.Float64),
                                   answer_recall=pl.lit(None, pl.Float64), answer_contains=pl.lit(None, pl.Boolean))
    assert default_targets(all_null) == ["grade"]
    correlations, differences, _ = analysis_tables(
        all_null.drop("grade").with_columns(answer_f1=pl.lit(0.5)), segmentation="fit", alpha_grid="linear:3",
        min_segment_samples=10, bootstrap_resamples=0, measures=["P"],
    )
    assert correlations["target"].unique().to_list() == ["answer_f1"]
    assert correlations["null_reason"].unique().to_list() == ["constant_target"]
    with pytest.raises(InputError, match="graded table: targets: no target has a value"):
        analysis_tables(all_null.drop("grade"), segmentation="fit", alpha_grid="linear:3", min_segment_samples=2)
    with pytest.raises(InputError, match="column answer_f1: required by analysis.targets"):
        analysis_tables(graded.drop("answer_f1"), segmentation="fit", alpha_grid="linear:3", min_segment_samples=2,
                        targets=["answer_f1"])
    with pytest.raises(ValueError, match="targets"):
        analysis_tables(graded, segmentation="fit", alpha_grid="linear:3", min_segment_samples=2, targets=["bleu"])
    with pytest.raises(InputError, match="column answer_f1: a target must be numeric or boolean"):
        analysis_tables(graded.with_columns(answer_f1=pl.lit("high")), segmentation="fit", alpha_grid="linear:3",
                        min_segment_samples=2)


def test_segments_without_target_values_do_not_break_either_kernel(graded):
    no_target = graded.with_columns(
        grade_expected=pl.when(pl.col("E") == "E1").then(None).otherwise(pl.col("grade_expected")),
        grade=pl.when(pl.col("E") == "E1").then(None).otherwise(pl.col("grade")),
    )
    correlations, _, _ = analysis_tables(no_target, segmentation="ratio", alpha_grid="linear:5", min_segment_samples=0,
                                   bootstrap_resamples=5, measures=["T", "nDCG"], targets=["grade", "grade_expected"])
    empty = correlations.filter(E="E1")
    assert empty.height > 0 and (empty["n_samples"] == 0).all() and (empty["n_missing_target"] > 0).all()
    assert empty["null_reason"].unique().to_list() == ["too_few_samples"]
    assert correlations.filter(E="E2")["value"].is_not_null().any()
