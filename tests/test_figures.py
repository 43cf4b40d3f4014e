"""Figures: the grade-distribution matrix (pure), segment labels, and PNGs of the expected size."""

from __future__ import annotations

import struct

import numpy as np
import polars as pl

from retrieval_response.segments import segment_labels
import pytest

from retrieval_response import figures
from retrieval_response.figures import (
    DPI,
    GRADES,
    MESSAGE_SIZE_INCHES,
    diverging_norm,
    grade_distribution_matrix,
    heatmap_size,
    plot_fit_correlations,
    plot_grade_distribution,
    plot_ratio_correlations,
    plot_ratio_differences,
)

EMBEDDERS = ["E5Sv2", "AML12v2", "ME5S"]


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def _assert_png(path, size_inches: tuple[float, float]) -> None:
    width, height = _png_size(path)
    assert abs(width - size_inches[0] * DPI) <= 1
    assert abs(height - size_inches[1] * DPI) <= 1
    assert path.stat().st_size > 5000
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.fixture(scope="module")
def graded() -> pl.DataFrame:
    rng = np.random.default_rng(4)
    n = 6000
    np_ = rng.integers(2, 6, n)
    k = np.maximum(1, np.round(np_ * rng.choice([0.5, 1.0, 2.0, 7.0], n, p=[0.3, 0.3, 0.38, 0.02])))
    grade = rng.integers(1, 6, n).astype(float)
    grade[rng.random(n) < 0.05] = np.nan
    subset = rng.choice(["A", "Hp-h"], n)
    return pl.DataFrame({
        "id": [f"{s}-{i}" for s, i in zip(subset, rng.integers(0, 300, n))],
        "subset": subset, "E": rng.choice(EMBEDDERS, n), "Nc": 20,
        "Np": np_.astype(np.int32), "K": k.astype(np.int32),
        "grade": pl.Series(grade).cast(pl.Int8, strict=False),
    })


def test_ratio_segment_uses_python_round():
    table = pl.DataFrame({"K": [5, 3, 1, 7, 2], "Np": [4, 4, 4, 4, 2]})
    assert segment_labels(table, "ratio").to_list() == ["1.2", "0.8", "0.2", "1.8", "1.0"]


def test_grade_distribution_columns_sum_to_one(graded):
    dist = grade_distribution_matrix(graded, min_segment_samples=100)
    assert dist.embedders == sorted(EMBEDDERS)
    assert dist.fractions.shape == (len(EMBEDDERS), len(GRADES), len(dist.segments))
    kept = dist.sizes > 0
    assert (dist.sizes[kept] >= 100).all()
    np.testing.assert_allclose(dist.fractions.sum(axis=1)[kept], 1.0)
    assert np.isnan(dist.fractions.sum(axis=1)[~kept]).all()
    segments = [float(s) for s in dist.segments]
    assert segments == sorted(segments)


def test_grade_distribution_counts_match_a_direct_count(graded):
    dist = grade_distribution_matrix(graded, min_segment_samples=100)
    e, s = 0, dist.segments.index("1.0")
    rows = graded.filter(pl.col("E") == dist.embedders[e], pl.col("grade").is_not_null(),
                         (pl.col("K") / pl.col("Np")) == 1.0)
    assert dist.sizes[e, s] == rows.height
    assert dist.fractions[e, 2, s] == pytest.approx((rows["grade"] == 3).sum() / rows.height)


def test_small_segments_are_dropped(graded):
    all_segments = set(segment_labels(graded, "ratio").unique().to_list())
    dist = grade_distribution_matrix(graded, min_segment_samples=100)
    assert set(dist.segments) < all_segments
    empty = grade_distribution_matrix(graded, min_segment_samples=10**9)
    assert empty.embedders == [] and empty.fractions.size == 0


def test_grades_off_the_scale_are_rejected(graded):
    with pytest.raises(ValueError, match="grade 7 outside the scale 1..5"):
        grade_distribution_matrix(graded.with_columns(pl.lit(7, pl.Int8).alias("grade")), min_segment_samples=1)


def test_grade_distribution_png(graded, tmp_path):
    path = tmp_path / "dist.png"
    plot_grade_distribution(graded, path, dataset="A", min_segment_samples=50)
    a_only = graded.filter(pl.col("id").str.starts_with("A-"))
    dist = grade_distribution_matrix(a_only, min_segment_samples=50)
    _assert_png(path, heatmap_size(len(dist.embedders) * len(GRADES), len(dist.segments)))


def test_empty_input_writes_a_message_png(graded, tmp_path):
    path = tmp_path / "none.png"
    plot_grade_distribution(graded, path, dataset="N", min_segment_samples=300)
    _assert_png(path, MESSAGE_SIZE_INCHES)


def _correlations() -> pl.DataFrame:
    rng = np.random.default_rng(9)
    rows = []
    for e in EMBEDDERS:
        for subset in ("A", "Hp"):
            for segment in ("narrow", "wide", "0.5", "1.0", "2.0", "10.0"):
                for measure in ("T", "nDCG", "F"):
                    for corr_type in ("spearman", "pearson"):
                        value = float(rng.uniform(-0.2, 0.7))
                        rows.append({"E": e, "subset": subset, "segment": segment,
                                     "n": int(rng.integers(300, 900)), "measure": measure,
                                     "corr_type": corr_type, "value": value, "alpha": 0.5,
                                     "value_crossfit": value - 0.01, "ci_low": value - 0.1,
                                     "ci_high": value + 0.1})
    return pl.DataFrame(rows)


def test_correlation_pngs(tmp_path):
    corr = _correlations()
    plot_fit_correlations(corr, tmp_path / "fit.png", corr_type="spearman", value_column="value_crossfit")
    _assert_png(tmp_path / "fit.png", heatmap_size(len(EMBEDDERS), 4, 3))
    plot_ratio_correlations(corr, tmp_path / "ratio.png", subset="Hp", measure="F", corr_type="pearson")
    _assert_png(tmp_path / "ratio.png", heatmap_size(len(EMBEDDERS), 4))
    plot_ratio_correlations(corr, tmp_path / "none.png", subset="M", measure="F", corr_type="pearson",
                            min_segment_samples=300)
    _assert_png(tmp_path / "none.png", MESSAGE_SIZE_INCHES)


def test_difference_png_and_symmetric_colour_limits(tmp_path):
    diff = (_correlations().filter(pl.col("measure") == "T")
            .with_columns(difference=pl.lit("T-F"), share_positive=pl.lit(0.5)))
    plot_ratio_differences(diff, tmp_path / "diff.png", subset="A", difference="T-F", corr_type="spearman")
    _assert_png(tmp_path / "diff.png", heatmap_size(len(EMBEDDERS), 4))
    norm = diverging_norm(np.array([0.1, 0.3, np.nan, -0.05]))
    assert (norm.vmin, norm.vmax) == (-0.3, 0.3)
    assert norm(0.0) == pytest.approx(0.5)


def test_bad_tables_are_rejected(tmp_path):
    corr = _correlations()
    with pytest.raises(ValueError, match="missing column"):
        plot_ratio_correlations(corr.drop("n"), tmp_path / "x.png", subset="A", measure="T", corr_type="spearman")
    doubled = pl.concat([corr, corr])
    with pytest.raises(ValueError, match="several rows"):
        plot_ratio_correlations(doubled, tmp_path / "x.png", subset="A", measure="T", corr_type="spearman")
    assert not (tmp_path / "x.png").exists()


def test_dataset_matches_paper_subset_or_subset_column(graded):
    by_paper_subset = figures.select_dataset(graded, "Hp")
    by_subset_column = figures.select_dataset(graded, "Hp-h")
    assert by_paper_subset.height == by_subset_column.height == (graded["subset"] == "Hp-h").sum()
