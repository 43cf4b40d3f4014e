"""The replication table: verdicts from intervals in the paper's direction, the segments each
conclusion reads, the spread comparison of conclusion 4, and the resampled correlations behind it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import benchmark
from retrieval_response.analysis.bootstrap import percentile_interval
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.measures.claims import CLAIMS, SPREAD_MEASURES, paired_differences
from retrieval_response.measures.registry import MEASURES
from retrieval_response.replication.verdicts import (
    C4,
    COLUMNS,
    replication,
    replication_corr_type,
    spread_rows,
)

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures" / "study_part1"
bench = benchmark("analysis")


def differences(rows) -> pl.DataFrame:
    """A differences table from (segmentation, segment, difference, value, ci_low, ci_high) rows."""
    return pl.DataFrame(
        [{"segmentation": s, "E": "ML6", "subset": "Hs", "segment": seg, "target": "grade", "n_samples": 300, "difference": d,
          "corr_type": "spearman", "value": v, "ci_low": lo, "ci_high": hi, "share_positive": 0.5}
         for s, seg, d, v, lo, hi in rows]
    )


def test_verdicts_follow_the_interval_in_the_papers_direction():
    fit = differences([("fit", "narrow", "T-nDCG", 0.2, 0.1, 0.3), ("fit", "wide", "T-nDCG", 0.2, 0.1, 0.3),
                       ("fit", "narrow", "T-F", -0.2, -0.3, -0.1)])
    ratio = differences([
        ("ratio", "2.0", "T-nDCG", 0.2, 0.1, 0.3),  # C1 reads nDCG-T: contradicted
        ("ratio", "3.0", "nDCG-F", 0.15, 0.05, 0.25),  # supported
        ("ratio", "0.5", "nDCG-F", 0.15, 0.05, 0.25),  # not high K/Np: not a C1 cell
        ("ratio", "1.0", "T-F", 0.1, -0.1, 0.3),  # not below 1: not a C2 T-F cell
        ("ratio", "1.0", "T-nDCG", 0.1, -0.1, 0.3),  # around 1: inconclusive
        ("ratio", "2.0", "F_e-F", 0.0, 0.0, 0.0),  # identical on every draw: inconclusive, detectable 0
        ("ratio", "2.0", "F_e_partner-F", 0.1, None, None),  # no interval: inconclusive
    ])
    table = replication({"fit": fit, "ratio": ratio})
    assert table.columns == list(COLUMNS)
    got = {(r["conclusion"][:2], r["segment"], r["difference"]): r for r in table.iter_rows(named=True)}
    assert set(got) == {("C1", "2.0", "nDCG-T"), ("C1", "3.0", "nDCG-F"), ("C2", "narrow", "T-nDCG"),
                        ("C2", "narrow", "T-F"), ("C2", "1.0", "T-nDCG"), ("C3", "2.0", "F_e-F"),
                        ("C3", "2.0", "F_e_partner-F")}
    negated = got["C1", "2.0", "nDCG-T"]
    assert (negated["value"], negated["ci_low"], negated["ci_high"]) == (-0.2, -0.3, -0.1)
    assert negated["verdict"] == "contradicted" and negated["detectable"] == pytest.approx(0.1)
    assert got["C1", "3.0", "nDCG-F"]["verdict"] == "supported"
    assert got["C2", "narrow", "T-nDCG"]["verdict"] == "supported"
    assert got["C2", "narrow", "T-F"]["verdict"] == "contradicted"
    assert got["C2", "1.0", "T-nDCG"]["verdict"] == "inconclusive"
    assert got["C2", "1.0", "T-nDCG"]["detectable"] == pytest.approx(0.2)
    assert (got["C3", "2.0", "F_e-F"]["verdict"], got["C3", "2.0", "F_e-F"]["detectable"]) == ("inconclusive", 0.0)
    assert got["C3", "2.0", "F_e_partner-F"]["verdict"] == "inconclusive"
    assert got["C3", "2.0", "F_e_partner-F"]["detectable"] is None


def spread_tables(values: dict, draws: int = 0, noise: float = 0.0, seed: int = 0):
    """Correlations (and resamples) of measure F from {(E, subset, segment): value}."""
    rng = np.random.default_rng(seed)
    rows = [{"segmentation": "ratio", "E": e, "subset": s, "segment": seg, "target": "grade", "measure": "F",
             "corr_type": "spearman", "value": v} for (e, s, seg), v in values.items()]
    correlations = pl.DataFrame(rows)
    resamples = correlations.select("E", "subset", "segment", "target", "measure", "corr_type").with_columns(
        resamples=pl.Series([list(v + noise * rng.normal(size=draws)) for v in values.values()],
                            dtype=pl.List(pl.Float64))
    )
    return correlations, resamples


CONTEXTS = [("Hs", "0.5"), ("Hs", "2.0"), ("A", "0.5"), ("A", "2.0")]


@pytest.mark.parametrize("context_effect, embedder_effect, verdict", [
    (0.3, 0.02, "supported"), (0.02, 0.3, "contradicted"), (0.06, 0.1, "inconclusive"),
])
def test_spread_across_contexts_against_spread_across_embedders(context_effect, embedder_effect, verdict):
    values = {(e, s, seg): 0.3 + context_effect * c + embedder_effect * k
              for k, e in enumerate(["ML6", "ME5S"]) for c, (s, seg) in enumerate(CONTEXTS)}
    correlations, resamples = spread_tables(values, draws=200, noise=0.02)
    row = spread_rows(correlations, resamples, "spearman").row(0, named=True)
    # contexts 0..3: mean |c1 - c2| over the 6 pairs is 5/3 effect; embedders differ by one effect
    assert row["value"] == pytest.approx(context_effect * 5 / 3 - embedder_effect, abs=1e-12)
    assert (row["conclusion"], row["E"], row["subset"], row["segment"]) == (C4, "ME5S,ML6", "all", "all")
    assert row["verdict"] == verdict


def test_spread_with_one_embedder_or_no_draws():
    values = {("ML6", s, seg): 0.1 * c for c, (s, seg) in enumerate(CONTEXTS)}
    row = spread_rows(*spread_tables(values, draws=50, noise=0.01), "spearman").row(0, named=True)
    assert (row["value"], row["ci_low"], row["verdict"], row["E"]) == (None, None, "inconclusive", "ML6")
    values |= {("ME5S", s, seg): 0.1 * c + 0.5 for c, (s, seg) in enumerate(CONTEXTS)}
    correlations, _ = spread_tables(values)
    row = spread_rows(correlations, None, "spearman").row(0, named=True)
    assert row["value"] == pytest.approx(1 / 6 - 0.5) and row["ci_low"] is None and row["verdict"] == "inconclusive"


def _negated(value: float | None) -> float | None:
    return None if value is None else -value


def test_resampled_correlations_are_the_draws_behind_the_intervals():
    graded = bench.synthetic_graded(8000, seed=4)
    options = dict(segmentation="ratio", alpha_grid="linear:5", corr_types=["spearman", "kendall_b"],
                   min_segment_samples=25, bootstrap_resamples=30, seed=3)
    correlations, diffs, resamples = analysis_tables(graded, **options, resample_corr_types=["spearman"])
    assert analysis_tables(graded, **options)[0].equals(correlations)
    assert set(resamples["corr_type"]) == {"spearman"}
    joined = correlations.filter(pl.col("corr_type") == "spearman").join(
        resamples, on=["E", "subset", "segment", "target", "measure", "corr_type"], how="inner")
    assert joined.height == correlations.filter(pl.col("corr_type") == "spearman").height
    draws = np.array(joined["resamples"].to_list())
    low, high = percentile_interval(draws)
    np.testing.assert_allclose(low, joined["ci_low"].fill_null(np.nan).to_numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(high, joined["ci_high"].fill_null(np.nan).to_numpy(), rtol=0, atol=0)
    # the replication's C1-C3 rows are rows of the differences table (negated where stored the other way)
    table = replication({"ratio": diffs}, correlations, resamples)
    keys = ["subset", "segment", "target", "E"]
    assert table.filter(pl.col("conclusion") != C4).height > 0
    for row in table.filter(pl.col("conclusion") != C4).iter_rows(named=True):
        first, second = row["difference"].split("-", 1)
        stored = diffs.filter(pl.col("corr_type") == "spearman", *[pl.col(k) == row[k] for k in keys])
        same = stored.filter(pl.col("difference") == row["difference"])
        if same.height:
            assert (row["value"], row["ci_low"]) == (same["value"][0], same["ci_low"][0])
        else:
            other = stored.filter(pl.col("difference") == f"{second}-{first}").row(0, named=True)
            assert (row["value"], row["ci_high"]) == (_negated(other["value"]), _negated(other["ci_low"]))
    spread = table.filter(pl.col("conclusion") == C4)
    assert spread.height > 0 and spread["ci_low"].null_count() == 0
    assert set(spread["E"]) == {",".join(sorted(graded["E"].unique()))}


def test_the_first_study_part():
    """HotpotQA sentences with one embedder (ML6): a verdict for C1-C3 in every cell, C4 inconclusive."""
    diffs = {s: pl.read_parquet(FIXTURES / f"differences_{s}.parquet") for s in ("fit", "ratio")}
    table = replication(diffs, pl.read_parquet(FIXTURES / "correlations_ratio.parquet"))
    assert set(table["conclusion"].str.slice(0, 2)) == {"C1", "C2", "C3", "C4"}
    assert table.filter(pl.col("conclusion") == C4)["verdict"].unique().to_list() == ["inconclusive"]
    cells = table.filter(pl.col("conclusion") != C4)
    assert cells["value"].null_count() == 0 and set(cells["subset"]) == {"Hs"}
    assert set(cells.filter(pl.col("conclusion").str.starts_with("C1"))["segment"]) == {"2.0", "3.0"}
    assert set(cells.filter(pl.col("difference") == "T-F")["segment"]) == {"0.3", "0.5", "0.7", "narrow"}
    narrow = cells.filter(pl.col("segment") == "narrow", pl.col("difference") == "T-F",
                          pl.col("target") == "grade_expected").row(0, named=True)
    assert narrow["verdict"] == "supported" and narrow["ci_low"] > 0
    # the detectable difference is the interval's half-width
    np.testing.assert_allclose(cells["detectable"], (cells["ci_high"] - cells["ci_low"]) / 2)


def test_corr_type_of_the_verdicts():
    assert replication_corr_type(["pearson", "spearman"]) == "spearman"
    assert replication_corr_type(["kendall_b"]) == "kendall_b"


def test_differences_are_the_claims_pairs_as_first_claimed_then_the_registrys():
    claimed = [(c.first, c.second) for c in CLAIMS]
    DIFFERENCES = paired_differences()
    assert DIFFERENCES[:5] == (("nDCG", "F"), ("nDCG", "T"), ("T", "F"), ("F_e", "F"), ("F_e_partner", "F"))
    for first, second in claimed:  # each claim's pair once: as it states it, or as an earlier claim does
        assert ((first, second) in DIFFERENCES) != ((second, first) in DIFFERENCES)
    assert ("nDCG", "T") in DIFFERENCES and ("T", "nDCG") not in DIFFERENCES
    added = [(m.name, other) for m in MEASURES.values() for other in m.differences_with]
    assert list(DIFFERENCES[5:]) == added
    assert SPREAD_MEASURES == ("F", "F_e", "F_e_partner", "T", "nDCG")
