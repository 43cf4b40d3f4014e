"""The verdict through the workflow: published samples whose answer is known, the verdict table and
what the end of the run prints."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import run_snakemake
from retrieval_response.testing.synthetic import graded_by_driver

pytestmark = pytest.mark.workflow


def _run(folder: Path, graded: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Write ``graded`` as published samples, run the verdict, return its table and the run's stderr."""
    samples = graded.with_columns(
        P=pl.col("inK").list.sum() / pl.col("K"), R=pl.col("inK").list.sum() / pl.col("Np"),
        answer_ideal=pl.lit("ideal"), answer_topK=pl.lit("top-K"),
    ).drop("subset")
    (folder / "samples_graded.json").write_text(json.dumps(samples.to_dicts()))
    config = {"published": {"graded": "samples_graded.json"},
              "analysis": {"min_segment_samples": 15, "bootstrap_resamples": 200, "alpha_grid": "linear:41",
                           "corr_types": ["spearman"]}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(folder, "--cores", "2", "results/analysis/verdict.parquet")
    return pl.read_parquet(folder / "results/analysis/verdict.parquet"), proc.stderr


def test_grades_driven_by_recall_make_precision_worse_and_the_run_says_so(tmp_path):
    verdict, stderr = _run(tmp_path, graded_by_driver(100, "recall", seed=3))
    every = verdict.filter(pl.col("segment") == "all")
    decisions = dict(zip(every["measure"], every["decision"], strict=True))
    assert decisions["P"] == "worse" and decisions["R"] == "possibly best"
    assert "worse" not in verdict.filter(pl.col("measure") == "R")["decision"].to_list()
    screen = stderr[stderr.index("Verdict on all samples"):]
    monitor = every.filter(pl.col("recommended")).row(0, named=True)
    assert f"grade | S | X: monitor {monitor['measure']}" in screen and "surely worse" in screen
    assert len(screen.strip().splitlines()) <= 25
    text = (tmp_path / "results/analysis/verdict.txt").read_text()
    assert text.count("grade | S | X |") == 3 and "  P: " in text and "worse: r - max(others)" in text


def test_perfect_rankings_end_the_run_with_cannot_decide_and_the_reasons(tmp_path):
    graded = graded_by_driver(60, "random", seed=1, perfect=True, designs=((10, 2, (1, 2)),))
    verdict, stderr = _run(tmp_path, graded)
    assert set(verdict["decision"]) == {"undecided"}
    screen = stderr[stderr.index("Verdict on all samples"):]
    assert "grade | S | X: cannot decide: " in screen and "monitor" not in screen
    assert "constant" in screen or "orders the samples exactly as" in screen
