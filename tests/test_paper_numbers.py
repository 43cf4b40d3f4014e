"""The paper's numbers: F_e_partner's epsilon, compat "paper", the minimum per measure, rounding-only spread."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from analysis_reference import random_graded, reference_first_max, scipy_curves
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.crossfit import crossfit, query_halves
from retrieval_response.analysis.segments import assign_segments
from retrieval_response.measures.alpha import alpha_grid
from retrieval_response.measures.features import add_features
from retrieval_response.measures.formulas import f_estimated_partner, f_measure, t_measure
from retrieval_response.measures.registry import MEASURES

pytestmark = pytest.mark.unit

CORR = ["spearman", "pearson", "kendall_b", "kendall_c"]


# the paper adds 1e-10 to n_p', not to the whole denominator


@pytest.mark.parametrize("seed", range(5))
def test_partner_epsilon_is_added_to_the_partner_positives(seed):
    rng = np.random.default_rng(seed)
    K = rng.integers(1, 30, 500)
    n_p = rng.integers(0, K + 1)
    partner = n_p + rng.integers(0, 10, 500)
    alpha = np.r_[0.0, 1.0, rng.random(40), alpha_grid("l350^0.95")]
    got = f_estimated_partner(n_p, K, partner, alpha, "paper")
    paper = np.array([[n / (a * k + (1 - a) * (p + 1e-10))
                       for n, k, p in zip(n_p.tolist(), K.tolist(), partner.tolist(), strict=True)]
                      for a in alpha.tolist()])
    assert np.array_equal(got, paper)
    whole_denominator = n_p / (alpha[:, None] * K + (1 - alpha[:, None]) * partner + 1e-10)
    assert not np.array_equal(got, whole_denominator)  # the two placements differ in float64


# compat "paper" reproduces the paper's floating-point order


def paper_measure(name: str, row: dict, partner: int | None, a: float) -> float:
    """One measure of one graded sample, transcribed from the paper's formulas, operation by operation."""
    inK, K, Np = row["inK"], row["K"], row["Np"]
    n_p = sum(inK)
    n_n = K - n_p
    if name == "F":
        return n_p / (a * K + (1 - a) * Np)
    if name == "F_e_partner":
        return n_p / (a * K + (1 - a) * (partner + 1e-10))
    if name == "T":
        return (1 - a) * n_p - (a * n_n) / K
    if name == "T_u":
        return (1 - a) * n_p - a * n_n
    if name == "nDCG":
        dcg = 0.0
        for i, relevant in enumerate(inK, start=1):
            dcg += relevant / math.log2(i + 1)
        ideal = 0.0
        for i in range(1, n_p + 1):
            ideal += 1 / math.log2(i + 1)
        return dcg / ideal if n_p > 0 else 0.0
    if name == "P":
        return n_p / K
    return n_p / Np


def paper_correlations(graded: pl.DataFrame, grid: np.ndarray, measures: list[str], minimum: int) -> dict:
    """(E, subset, segment, measure, corr type) -> (max over alpha, first alpha, cross-fitted) with scipy."""
    rows = graded.filter(pl.col("grade").is_not_null()).with_columns(
        subset=pl.col("id").str.split("-").list.first(),
        segment=pl.when(pl.col("K") < pl.col("Np")).then(pl.lit("narrow")).otherwise(pl.lit("wide")),
    )
    n_p_of = {(r["id"], r["E"], r["Nc"], r["Np"], r["K"]): sum(r["inK"]) for r in graded.iter_rows(named=True)}
    queries = graded.select("id").unique().sort("id").with_columns(subset=pl.col("id").str.split("-").list.first())
    half_a = dict(zip(queries["id"], query_halves(queries["id"].to_numpy(), queries["subset"].to_numpy(), 0), strict=True))
    out = {}
    for (E, subset, segment), frame in rows.group_by(["E", "subset", "segment"]):
        records = frame.to_dicts()
        for name in measures:
            has_alpha = MEASURES[name].has_alpha
            alphas = grid.tolist() if has_alpha else [0.0]
            used = []
            for r in records:
                partner = n_p_of.get((r["id"], r["E"], r["Nc"], r["Np"], round(2 * r["K"])))
                if name != "F_e_partner" or partner is not None:
                    used.append((r, partner))
            if len(used) < minimum:
                continue
            values = np.array([[paper_measure(name, r, p, a) for r, p in used] for a in alphas])
            grade = np.array([float(r["grade"]) for r, _ in used])
            in_a = np.array([half_a[r["id"]] for r, _ in used])
            full = scipy_curves(values, grade, CORR)
            part_a, part_b = scipy_curves(values[:, in_a], grade[in_a], CORR), scipy_curves(values[:, ~in_a], grade[~in_a], CORR)
            for corr_type in CORR:
                if np.isnan(full[corr_type]).all():
                    out[E, subset, segment, name, corr_type] = (None, None, None)
                    continue
                best, index = reference_first_max(full[corr_type])
                fitted = crossfit(part_a[corr_type], part_b[corr_type])[0] if has_alpha else best
                out[E, subset, segment, name, corr_type] = (
                    best, grid[index] if has_alpha else None, None if np.isnan(fitted) else float(fitted)
                )
    return out


@pytest.mark.parametrize("seed", range(3))
def test_compat_paper_equals_a_transcription_of_the_paper(seed):
    graded = random_graded(seed=10 + seed, n_queries=50)
    grid = alpha_grid("l20^0.8")
    measures = ["F", "F_e_partner", "T", "T_u", "nDCG", "P", "R"]
    expected = paper_correlations(graded, grid, measures, minimum=25)
    got, _, _ = analysis_tables(graded, segmentation="fit", alpha_grid=grid, min_segment_samples=25, bootstrap_resamples=0,
                          measures=measures, targets=["grade"], compat="paper")
    assert got.height == len(expected) >= 100
    for row in got.iter_rows(named=True):
        value, alpha, fitted = expected[row["E"], row["subset"], row["segment"], row["measure"], row["corr_type"]]
        if value is None:
            assert row["value"] is None
            continue
        assert row["value"] == pytest.approx(value, abs=1e-8)
        assert row["alpha"] == alpha
        assert (row["value_crossfit"] is None) == (fitted is None)
        if fitted is not None:
            assert row["value_crossfit"] == pytest.approx(fitted, abs=1e-8)


def test_t_orders_of_operations_differ_only_where_the_paper_splits_ties():
    grid = alpha_grid("l350^0.95")
    K = np.arange(1, 31)
    exact, paper = t_measure(np.zeros_like(K), K, grid, "exact"), t_measure(np.zeros_like(K), K, grid, "paper")
    # n_p = 0: exact gives -a for every K (one tie group); the paper's (a*K)/K splits some of them by one ulp
    assert (exact == -grid[:, None]).all()
    split = paper != exact
    assert split.any() and (np.abs(paper - exact)[split] <= np.spacing(np.abs(exact))[split]).all()
    # with n_p > 0 the two orders agree to rounding
    n_p = np.minimum(K, 3)
    assert np.allclose(t_measure(n_p, K, grid, "exact"), t_measure(n_p, K, grid, "paper"), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="compat"):
        t_measure(n_p, K, grid, "fast")


@pytest.mark.parametrize("seed", range(4))
def test_compat_modes_rank_n_p_zero_samples_differently_where_the_paper_splits_them(seed):
    rng = np.random.default_rng(seed)
    grid = alpha_grid("l350^0.95")
    K_pairs = [(k1, k2) for k1 in range(1, 16) for k2 in range(k1 + 1, 16)]
    split = [(a, k1, k2) for a in grid for k1, k2 in K_pairs if (a * k1) / k1 != (a * k2) / k2]
    a, k1, k2 = split[int(rng.integers(len(split)))]
    # one segment: n_p = 0 at K = k1 and k2 (grade 1 or 2), n_p = 1 at K = k1 (grade 3), Np > K: narrow
    n = 60
    K = np.array([k1, k2, k1] * n)
    n_p = np.array([0, 0, 1] * n)
    graded = pl.DataFrame({
        "id": [f"A-{i}" for i in range(3 * n)], "E": "X", "Nc": 40, "Np": 20, "K": K,
        "inK": [[1] * p + [0] * (k - p) for p, k in zip(n_p, K, strict=False)],
        "grade": np.where(n_p == 1, 3, rng.integers(1, 3, 3 * n)),
    })
    tables = {compat: analysis_tables(graded, segmentation="fit", alpha_grid=np.array([a]), min_segment_samples=10,
                                   bootstrap_resamples=0, measures=["T"], compat=compat)[0] for compat in ("exact", "paper")}
    references = {"paper": (1 - a) * n_p - (a * (K - n_p)) / K, "exact": (1 - a) * n_p - a * ((K - n_p) / K)}
    grade = graded["grade"].to_numpy().astype(float)
    for compat, table in tables.items():
        reference = references[compat]
        for row in table.iter_rows(named=True):
            assert row["value"] == pytest.approx(scipy_curves(reference, grade, [row["corr_type"]])[row["corr_type"]][0],
                                                 abs=1e-9)
    # the paper's order splits the n_p = 0 samples into two values, the exact order keeps them tied
    assert len(np.unique(references["paper"])) == 3 and len(np.unique(references["exact"])) == 2
    assert tables["exact"].filter(corr_type="spearman")["value"][0] != tables["paper"].filter(corr_type="spearman")["value"][0]


# the minimum segment size applies to the measure's own n


@pytest.mark.parametrize("seed", range(5))
def test_minimum_applies_to_each_measures_own_n(seed):
    rng = np.random.default_rng(seed)
    graded = random_graded(seed=20 + seed, n_queries=70, embedders=("E1", "E2", "E3"))
    minimum = int(rng.integers(5, 80))
    got, differences, _ = analysis_tables(graded, segmentation="fit", alpha_grid="linear:5", min_segment_samples=minimum,
                                    bootstrap_resamples=0, measures=["F", "F_e_partner", "T"])
    samples = assign_segments(add_features(graded), "fit").filter(pl.col("grade").is_not_null())
    keys = ["E", "subset", "segment"]
    for name, rows in (("F", samples), ("T", samples), ("F_e_partner", samples.drop_nulls("np_partner"))):
        sizes = rows.group_by(keys).len("n_samples").filter(pl.col("n_samples") >= minimum)
        table = got.filter(measure=name, corr_type="spearman").select(*keys, "n_samples")
        assert sorted(table.rows()) == sorted(sizes.select(*keys, pl.col("n_samples").cast(pl.Int64)).rows())
    assert got.height > 0 and got["n_samples"].min() >= minimum
    partner_segments = got.filter(measure="F_e_partner").select(keys).unique()
    f_segments = got.filter(measure="F").select(keys).unique()
    assert len(partner_segments) <= len(f_segments)
    diff_segments = differences.filter(difference="F_e_partner-F").select(keys).unique()
    assert sorted(diff_segments.rows()) == sorted(partner_segments.join(f_segments, on=keys).rows())


# a measure constant in exact arithmetic but spread by rounding is constant


def proportional_segment(rng) -> tuple[pl.DataFrame, np.ndarray]:
    """One segment whose (n_p, K, Np) cells are all multiples of one (p, k, N): F(a) is the same for all.

    Drawn until F spreads by rounding at some alpha of the grid; returns the table and that grid.
    """
    grid = alpha_grid("l40^0.9")
    while True:
        N = int(rng.integers(2, 9))
        k = int(rng.integers(1, 9))
        p = int(rng.integers(1, min(k, N) + 1))
        m = rng.choice([1, 3, 5, 6, 7, 9, 11], size=60)
        F = f_measure(m * p, m * k, m * N, grid)
        if (F.max(axis=1) > F.min(axis=1)).any():
            break
    graded = pl.DataFrame({
        "id": [f"A-{i}" for i in range(len(m))], "E": "X", "Nc": int(m.max() * max(k, N)) + 1, "Np": m * N, "K": m * k,
        "inK": [[1] * int(mi * p) + [0] * int(mi * (k - p)) for mi in m], "grade": rng.integers(1, 6, len(m)),
    })
    return graded, grid


@pytest.mark.parametrize("seed", range(6))
def test_measure_spread_by_rounding_only_is_null_constant_measure(seed):
    graded, grid = proportional_segment(np.random.default_rng(seed))
    got, _, _ = analysis_tables(graded, segmentation="fit", alpha_grid=grid, min_segment_samples=10, bootstrap_resamples=0,
                          measures=["F", "P", "R", "T"])
    F = got.filter(measure="F")
    assert F["value"].is_null().all() and F["null_reason"].unique().to_list() == ["constant_measure"]
    assert got.filter(measure="P")["null_reason"].unique().to_list() == ["constant_measure"]
    assert got.filter(measure="T")["value"].is_not_null().all()
    # what scipy makes of the raw floats: a "correlation" of rounding noise at some alpha
    features = add_features(graded)
    raw = MEASURES["F"].evaluate({c: features[c].to_numpy() for c in ("n_p", "K", "Np")}, grid)
    noise = scipy_curves(raw, graded["grade"].to_numpy().astype(float), ["spearman"])["spearman"]
    assert not np.isnan(noise).all()
