"""The published-data mode: a samples_graded.json alone drives the analysis, no LLM, no embedding."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from conftest import REPO, run_snakemake, shared_config


def write_published(folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """Synthetic samples_graded.json and samples_ranked.json in the published layout.

    Two subsets x two embedders x 40 queries, Nc=8, Np in {2, 3}, K = 1..6; grades rise with
    the positives retrieved, plus noise. ``write_published(Path(".test/data/published"))`` made the
    files that .test/config_published.yaml analyses.
    """
    rng = np.random.default_rng(seed)
    graded, ranked = [], []
    for subset in ("A", "M"):
        for query in range(40):
            np_ = 2 + query % 2
            for embedder in ("ML6", "PML3"):
                rank = [int(i) for i in rng.permutation(8)]
                ks = list(range(1, 7))
                in_top = [[int(i < np_) for i in rank[:k]] for k in ks]
                ranked.append({"id": f"{subset}-{query}", "E": embedder, "Nc": 8, "Np": np_, "K": ks,
                               "P": [sum(x) / k for x, k in zip(in_top, ks, strict=False)],
                               "R": [sum(x) / np_ for x in in_top], "rank": rank})
                for k, inK in zip(ks, in_top, strict=False):
                    grade = int(np.clip(1 + 2 * sum(inK) + rng.integers(-1, 2), 1, 5))
                    graded.append({"id": f"{subset}-{query}", "E": embedder, "Nc": 8, "Np": np_, "K": k,
                                   "rank": rank[:k], "inK": inK, "answer_ideal": "ideal", "answer_topK": "top",
                                   "grade": grade, "P": sum(inK) / k, "R": sum(inK) / np_})
    graded_path, ranked_path = folder / "samples_graded.json", folder / "samples_ranked.json"
    graded_path.write_text(json.dumps(graded))
    ranked_path.write_text(json.dumps(ranked))
    return graded_path, ranked_path


@pytest.mark.unit
def test_the_shipped_published_test_data_is_what_write_published_makes(tmp_path):
    write_published(tmp_path)
    shipped = REPO / ".test/data/published"
    for name in ("samples_graded.json", "samples_ranked.json"):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
    human = (REPO / "tests/fixtures/published/samples_human.json").read_bytes()
    assert (shipped / "samples_human.json").read_bytes() == human


@pytest.fixture(scope="module")
def published_run(tmp_path_factory):
    """.test/config_published.yaml run to the end and its report built: (folder, the run's log)."""
    folder = tmp_path_factory.mktemp("published")
    config = shared_config("config_published", folder)  # .test/config_published.yaml
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(folder, "--cores", "2")
    run_snakemake(folder, "--report", "report.html")
    return folder, proc.stdout + proc.stderr


@pytest.mark.workflow
def test_published_files_alone_produce_tables_and_figures(published_run):
    tmp_path, log = published_run
    assert "rule embed" not in log and "rule grade" not in log and "rule prepare_dataset" not in log

    fit = pl.read_parquet(tmp_path / "results/analysis/correlations_fit.parquet")
    assert {"E", "subset", "segment", "n_samples", "measure", "corr_type", "value", "alpha", "value_crossfit",
            "ci_low", "ci_high"} <= set(fit.columns)
    assert set(fit["subset"]) == {"A", "M"} and set(fit["E"]) == {"ML6", "PML3"}
    assert {"F", "T", "T_u", "nDCG", "F_e"} <= set(fit["measure"])
    spearman_t = fit.filter(measure="T", corr_type="spearman")
    assert (spearman_t["value"] > 0.5).all(), "grades were built to rise with n_p"
    assert (spearman_t["ci_low"] <= spearman_t["value"]).all() and (spearman_t["value"] <= spearman_t["ci_high"]).all()

    differences = pl.read_parquet(tmp_path / "results/analysis/differences_ratio.parquet")
    assert {"nDCG-F", "nDCG-T", "T-F", "F_e-F", "T_u-T"} <= set(differences["difference"])
    assert differences["share_positive"].is_between(0, 1).all()

    replication = pl.read_parquet(tmp_path / "results/analysis/replication.parquet")
    assert replication.columns == ["conclusion", "subset", "segment", "target", "E", "difference", "value", "ci_low",
                                   "ci_high", "verdict", "detectable", "value_crossfit", "p_adjusted",
                                   "verdict_adjusted"]
    assert set(replication["verdict"]) <= {"supported", "contradicted", "inconclusive"}
    assert set(replication["verdict_adjusted"]) <= {"supported", "contradicted", "inconclusive"}
    spread = replication.filter(pl.col("conclusion").str.starts_with("C4"))
    assert spread.height > 0 and spread["ci_low"].null_count() == 0 and set(spread["E"]) == {"ML6,PML3"}

    figures = {p.name for p in (tmp_path / "results/figures").iterdir()} - {".snakemake_timestamp"}
    assert figures == {"verdict.png", "verdict_fit.png", "grades_ratio.png", "heatmap_fit_grade.png", "forest_fit.png",
                       "heatmap_ratio_grade.png", "forest_ratio_grade.png", "diff_ratio_grade.png", "figures.json",
                       "figures.html", "verdict_embedded.rst"}
    results = [line for line in log.splitlines() if line.startswith("Results: ")]
    assert results == ["Results: the forest plot is results/figures/forest_fit.png; every figure with its caption: "
                       f"snakemake --report report.html --configfile {tmp_path / 'config.yaml'}"]
    manifest = json.loads((tmp_path / "results/figures/figures.json").read_text())
    assert manifest["codes"] == {"rankers": {"ML6": "all-MiniLM-L6-v2", "PML3": "paraphrase-MiniLM-L3-v2"},
                                 "subsets": {"A": "arXiv", "M": "MS MARCO"}}
    assert manifest["not_run"] == [] and all(e["reason"].startswith(("n < 20", "undefined"))
                                            for e in manifest["left_out"])
    report = (tmp_path / "report.html").read_text()
    assert all(name in report for name in figures - {"figures.json", "verdict_embedded.rst"})
    assert "The question at a glance" in report and "What the figure run drew" in report  # per-figure captions

    agreement = pl.read_parquet(tmp_path / "results/analysis/agreement.parquet")
    assert "human_1-human_2" in set(agreement["pair"])


def _report_variable(report: str, name: str):
    """The value of ``var <name> = ...;`` in a Snakemake HTML report (JSON)."""
    match = re.search(rf"var {name} = (.*?);\n", report, re.DOTALL)
    assert match, name
    return json.loads(match.group(1))


@pytest.mark.workflow
def test_the_report_opens_on_the_verdict_figure_and_words(published_run):
    """The report's description (its front page) embeds the verdict figure and states the
    verdict of every family on all samples; the verdict is the first category."""
    tmp_path, _ = published_run
    report = (tmp_path / "report.html").read_text()
    front = _report_variable(report, "workflow_desc")
    figure = base64.b64encode((tmp_path / "results/figures/verdict.png").read_bytes()).decode("ascii")
    assert f"data:image/png;base64,{figure}" in front
    verdict = pl.read_parquet(tmp_path / "results/analysis/verdict.parquet").filter(segment="all")
    best = verdict.filter(pl.col("recommended"))
    assert best.height == verdict.select("target", "subset", "E").n_unique() > 0
    for row in best.iter_rows(named=True):
        alpha = f" (alpha {row['alpha']:.3g})" if row["alpha"] is not None else ""
        assert (f"{row['measure']}{alpha} {row['value']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]"
                in front), row
    assert front.index("data:image/png") < front.index("<table")
    categories = _report_variable(report, "categories")
    assert sorted(categories)[0] == "1. Verdict"
    assert {Path(path).name for paths in categories["1. Verdict"].values() for path in paths} == {
        "verdict.png", "verdict_fit.png", "verdict.txt"}
