"""analysis_tables end to end: table layout, variants, finer keys, errors, writing."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from conftest import benchmark
from retrieval_response.analysis.correlation_tables import analysis_tables, write_analysis
from retrieval_response.infra.errors import InputError
from retrieval_response.measures.alpha import alpha_grid

pytestmark = pytest.mark.unit

bench = benchmark("analysis")

CORRELATION_COLUMNS = [
    "segmentation", "E", "subset", "segment", "target", "n_samples", "n_missing_target", "measure", "corr_type", "value",
    "null_reason", "alpha", "alpha_rule", "value_crossfit", "ci_low", "ci_high",
]
DIFFERENCE_COLUMNS = [
    "segmentation", "E", "subset", "segment", "target", "n_samples", "difference", "corr_type", "value", "ci_low", "ci_high",
    "share_positive",
]


@pytest.fixture(scope="module")
def graded():
    table = bench.synthetic_graded(8000, seed=2)
    return table.with_columns(grade=pl.when(pl.int_range(pl.len()) % 10 == 0).then(None).otherwise(pl.col("grade")))


def test_table_layout_and_alpha_columns(graded):
    correlations, differences, _ = analysis_tables(
        graded, segmentation="ratio", alpha_grid="l350^0.95", corr_types=["spearman", "kendall_c"],
        min_segment_samples=25, bootstrap_resamples=50,
    )
    assert correlations.columns == CORRELATION_COLUMNS
    assert differences.columns == DIFFERENCE_COLUMNS
    assert set(correlations["corr_type"]) == {"spearman", "kendall_c"}
    assert set(correlations["measure"]) == {"F", "F_e", "T", "T_u", "nDCG", "nDCG@K", "RR@K", "AP@K", "P", "R"}
    with_alpha = correlations.filter(pl.col("measure").is_in(["F", "F_e", "T", "T_u"])).drop_nulls("value")
    assert with_alpha["alpha"].is_in(alpha_grid("l350^0.95").tolist()).all()
    assert with_alpha["alpha_rule"].unique().to_list() == ["first max over l350^0.95 (702 values)"]
    without = correlations.filter(pl.col("measure").is_in(["nDCG", "P"]))
    assert without["alpha"].is_null().all() and without["alpha_rule"].is_null().all()
    assert without.drop_nulls("value").select((pl.col("value") == pl.col("value_crossfit")).all()).item()
    # ratio segments are ordered numerically within (E, subset) and all are big enough
    first = correlations.filter((pl.col("E") == "AML12v2") & (pl.col("subset") == "A"))["segment"].unique(maintain_order=True)
    assert first.cast(pl.Float64).is_sorted()
    assert correlations.height > 0 and (correlations["n_samples"] >= 25).all()
    # every tenth row is ungraded: counted beside, never in n
    totals = correlations.filter((pl.col("measure") == "F") & (pl.col("corr_type") == "spearman"))
    assert totals["target"].unique().to_list() == ["grade"]
    assert totals["n_missing_target"].sum() > 0
    assert totals["n_samples"].sum() + totals["n_missing_target"].sum() <= len(graded)


def test_maximum_is_at_least_the_crossfit_and_every_grid_point(graded):
    correlations, _, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid="linear:21", min_segment_samples=100, bootstrap_resamples=0, measures=["T", "P"]
    )
    t = correlations.filter(pl.col("measure") == "T").drop_nulls("value_crossfit")
    assert (t["value"] >= t["value_crossfit"] - 0.05).all()
    # T at alpha 1 ranks like -n_n/K, i.e. like P: the maximum over alpha is at least P's correlation
    merged = t.join(correlations.filter(pl.col("measure") == "P"), on=["E", "subset", "segment", "corr_type"], suffix="_P")
    assert (merged["value"] >= merged["value_P"] - 1e-12).all()


def test_partner_variant_when_no_np_2k_and_finer_keys(graded):
    correlations, differences, _ = analysis_tables(
        graded.drop("np_2K").with_columns(id=pl.col("id").str.replace(r"^A-", "A-x-")),
        segmentation="fit", alpha_grid="linear:11", min_segment_samples=20, finer_keys=["level", "Np"],
        bootstrap_resamples=0,
    )
    assert "F_e_partner" in correlations["measure"].to_list() and "F_e" not in correlations["measure"].to_list()
    assert "F_e_partner-F" in differences["difference"].to_list()
    assert correlations.columns[:6] == ["segmentation", "E", "subset", "level", "Np", "segment"]
    assert "A-x" in correlations["level"].to_list()
    partner = correlations.filter(pl.col("measure") == "F_e_partner")
    f = correlations.filter(pl.col("measure") == "F")
    # K' = 2K exists only for K <= 7: the partner variant sees fewer samples, and only its own n counts
    keys = ["E", "subset", "level", "Np", "segment", "corr_type"]
    both = partner.join(f, on=keys, suffix="_F")
    assert (both["n_samples"] <= both["n_samples_F"]).all() and (both["n_samples"] < both["n_samples_F"]).any()
    assert partner["n_samples"].min() >= 20 and len(partner) < len(f)
    assert differences["ci_low"].is_null().all()


def test_errors_and_writing(graded, tmp_path):
    with pytest.raises(InputError, match="graded table: targets: no target has a value"):
        analysis_tables(graded.drop("grade"), segmentation="fit", alpha_grid="linear:3", min_segment_samples=2)
    with pytest.raises(ValueError, match="segmentation"):
        analysis_tables(graded, segmentation="KNp", alpha_grid="linear:3", min_segment_samples=2)
    with pytest.raises(ValueError, match="measures"):
        analysis_tables(graded, segmentation="fit", alpha_grid="linear:3", min_segment_samples=2, measures=["G"])
    correlations, differences, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid=np.array([0.0, 0.5, 1.0]), min_segment_samples=100, bootstrap_resamples=0
    )
    assert correlations.drop_nulls("alpha_rule")["alpha_rule"].unique().to_list() == ["first max over a given grid (3 values)"]
    write_analysis(correlations, differences, tmp_path / "c.parquet", tmp_path / "d.parquet")
    assert pl.read_parquet(tmp_path / "c.parquet").equals(correlations)
    assert pl.read_parquet(tmp_path / "d.parquet").equals(differences)


def test_no_segment_large_enough_gives_empty_typed_tables(graded, tmp_path):
    correlations, differences, _ = analysis_tables(
        graded, segmentation="ratio", alpha_grid="linear:5", min_segment_samples=10**9, bootstrap_resamples=5
    )
    assert correlations.height == differences.height == 0
    assert correlations.schema["measure"] == correlations.schema["corr_type"] == pl.String
    assert differences.schema["difference"] == pl.String
    write_analysis(correlations, differences, tmp_path / "c.parquet", tmp_path / "d.parquet")
    assert pl.read_parquet(tmp_path / "c.parquet").schema == correlations.schema


@pytest.mark.parametrize("seed", range(3))
def test_every_null_value_says_why(seed):
    rng = np.random.default_rng(seed)
    n = 40
    K = rng.integers(1, 6, n)
    graded = pl.DataFrame({
        "id": [f"A-{i}" for i in range(n)], "E": rng.choice(["X", "Y"], n), "Nc": 12, "Np": 6, "K": K,
        "inK": [[int(v) for v in rng.integers(0, 2, k)] for k in K], "grade": rng.integers(1, 6, n),
    })
    single = pl.DataFrame({"id": ["M-1"], "E": ["X"], "Nc": [12], "Np": [6], "K": [2], "inK": [[1, 0]], "grade": [4]})
    constant = graded.with_columns(id=pl.col("id").str.replace("A-", "N-"), grade=pl.lit(2))
    table = pl.concat([graded, single.with_columns(pl.col("grade").cast(graded["grade"].dtype)), constant],
                      how="vertical_relaxed")
    correlations, _, _ = analysis_tables(table, segmentation="fit", alpha_grid="linear:5", min_segment_samples=1,
                                   bootstrap_resamples=0, measures=["T", "P", "nDCG"])
    reasons = dict(correlations.group_by("subset").agg(pl.col("null_reason").unique()).iter_rows())
    assert reasons["M"] == ["too_few_samples"] and reasons["N"] == ["constant_target"]
    assert correlations.filter(subset="A")["value"].is_not_null().all()
    assert (correlations["value"].is_null() == correlations["null_reason"].is_not_null()).all()
    assert set(correlations["null_reason"].drop_nulls()) <= {"too_few_samples", "constant_target", "constant_measure"}


def test_one_positive_per_query_is_analysed_like_any_design():
    """Np = 1 (one relevant document, most BEIR sets): every K is in the wide segment, every
    measure has a value."""
    rng = np.random.default_rng(5)
    rows = []
    for query in range(200):
        rank = rng.permutation(5).tolist()
        for K in (1, 2, 3, 4):
            inK = [int(r < 1) for r in rank[:K]]
            rows.append({"id": f"B-{query}", "E": "X", "Nc": 5, "Np": 1, "K": K, "inK": inK,
                         "grade": int(np.clip(2 + 2 * sum(inK) + rng.integers(-1, 2), 1, 5))})
    graded = pl.DataFrame(rows, schema_overrides={"Nc": pl.Int32, "Np": pl.Int32, "K": pl.Int32,
                                                  "inK": pl.List(pl.Int8), "grade": pl.Int8})
    correlations, _, _ = analysis_tables(graded, segmentation="fit", alpha_grid="linear:5", corr_types=["spearman"],
                                   min_segment_samples=50, bootstrap_resamples=0)
    assert correlations["segment"].unique().to_list() == ["wide"]
    assert set(correlations["measure"]) >= {"F", "T", "nDCG@K", "P", "R"}
    assert correlations["value"].is_not_null().all() and (correlations["value"] > 0).all()
