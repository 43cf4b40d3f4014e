"""Segment assignment (docs/METHODS.md#segments) and min_segment_samples."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.analysis.segments import assign_segments, ratio_label, segment_keys

pytestmark = pytest.mark.unit


def frame(K, Np, ids=None, grade=None):
    n = len(K)
    return pl.DataFrame(
        {
            "id": ids or [f"A-{i}" for i in range(n)], "E": ["X"] * n, "Nc": [20] * n, "Np": Np, "K": K,
            "grade": grade or [3] * n,
        }
    )


def test_narrow_wide():
    out = assign_segments(frame([1, 2, 3, 5], [3, 3, 3, 3]), "fit")
    assert out["segment"].to_list() == ["narrow", "narrow", "wide", "wide"]


def test_ratio_uses_python_round_on_the_float():
    K, Np = [1, 7, 9, 3, 2, 15], [4, 20, 20, 2, 3, 7]
    out = assign_segments(frame(K, Np), "ratio")
    assert out["segment"].to_list() == ["0.2", "0.3", "0.5", "1.5", "0.7", "2.1"]
    # numpy's round disagrees on 7/20 = 0.35 (binary 0.34999...): why Python's round is used
    assert np.round(7 / 20, 1) == 0.4 and round(7 / 20, 1) == 0.3
    pairs = [(k, n) for k in range(1, 31) for n in range(2, 16)]
    table = assign_segments(frame([k for k, _ in pairs], [n for _, n in pairs]), "ratio")
    assert table["segment"].to_list() == [f"{round(k / n, 1):.1f}" for k, n in pairs]
    assert ratio_label(1, 4) == "0.2"


def test_subset_from_id_and_level_as_finer_key():
    out = assign_segments(frame([1, 1, 1], [2, 2, 2], ids=["Hp-e-1", "Hp-h-2", "N-3"]), "fit")
    assert out["subset"].to_list() == ["Hp", "Hp", "N"]
    assert out["level"].to_list() == ["Hp-e", "Hp-h", "N"]
    kept = assign_segments(frame([1], [2], ids=["Hp-e-1"]).with_columns(subset=pl.lit("custom")), "fit")
    assert kept["subset"].to_list() == ["custom"]
    assert segment_keys(["level", "Np"]) == ["E", "subset", "level", "Np", "segment"]
    with pytest.raises(ValueError, match="finer keys"):
        segment_keys(["K"])


def test_min_segment_samples_leaves_small_segments_out():
    rng = np.random.default_rng(0)
    n = 400
    K = rng.integers(1, 10, n)
    inK = [[int(v) for v in rng.integers(0, 2, k)] for k in K]
    graded = pl.DataFrame(
        {"id": [f"A-{i % 50}" for i in range(n)], "E": "X", "Nc": 30, "Np": 9, "K": K, "inK": inK,
         "grade": rng.integers(1, 6, n)}
    )
    narrow = int((K < 9).sum())
    wide = n - narrow
    assert wide < 100 < narrow
    correlations, differences, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid="linear:11", min_segment_samples=100, bootstrap_resamples=0
    )
    assert correlations["segment"].unique().to_list() == ["narrow"]
    assert correlations["n_missing_target"].unique().to_list() == [0]
    assert differences["segment"].unique().to_list() == ["narrow"]
    everything, _, _ = analysis_tables(
        graded, segmentation="fit", alpha_grid="linear:11", min_segment_samples=wide, bootstrap_resamples=0
    )
    assert sorted(everything["segment"].unique().to_list()) == ["narrow", "wide"]
