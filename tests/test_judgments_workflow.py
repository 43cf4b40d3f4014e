"""The judge_documents rule in Snakemake against the loopback server: one call per distinct (query,
text) pair and kind, a rerun makes no call, the analysis correlates eRAG_P, UDCG and T_umbrela and
reports their differences with T, and UMBRELA's agreement table.

The upstream stages are replaced by synthetic texts and ranked files (``--allowed-rules``)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import llm_config, llm_workdir, run_snakemake
from retrieval_response.llm.document_judgments import judged_pairs
from retrieval_response.testing.synthetic import synthetic_texts

pytestmark = pytest.mark.workflow

JUDGE = ("--allowed-rules", "judge_documents", "--", "results/judgments/tiny.parquet")
ANALYSIS = ("--allowed-rules", "judge_documents", "answer_ideal", "answer_topk", "grade", "merge_graded",
            "llm_summary", "collect_graded", "correlations", "umbrela_agreement", "--",
            "results/llm_summary.json", "results/analysis/correlations_fit.parquet",
            "results/analysis/umbrela_agreement.parquet")


@pytest.fixture(scope="module")
def workdir(loopback_llm, tmp_path_factory) -> Path:
    config = llm_config(
        loopback_llm, designs=[{"Nc": 5, "Np": 2}, {"Nc": 6, "Np": 2}],
        rankers={"ML6": {"backend": "gt_minilm_l6"}, "PML3": {"backend": "paraphrase_minilm_l3_onnx"}},
        prompts=("answer", "grade", "udcg", "umbrela"), document_judgments={"kinds": ["erag", "udcg", "umbrela"]},
        analysis={"segmentations": ["fit"], "alpha_grid": "linear:5", "min_segment_samples": 4,
                  "bootstrap_resamples": 20})
    texts = synthetic_texts(8, n_pos=2, n_neg=4).with_columns(answers=pl.lit(["alpha"]))
    return llm_workdir(tmp_path_factory.mktemp("judgments_workflow"), config, {"tiny": texts})


def _pairs(workdir: Path) -> pl.DataFrame:
    ranked = [pl.read_parquet(p) for p in sorted((workdir / "results/ranked/tiny").rglob("*.parquet"))]
    texts = pl.read_parquet(workdir / "results/texts/tiny.parquet")
    return judged_pairs([(r, texts) for r in ranked])


def test_one_call_per_distinct_pair_and_kind_then_none(workdir, loopback):
    before = loopback.stats()["requests"]
    run_snakemake(workdir, "--cores", "2", *JUDGE)
    pairs = _pairs(workdir)
    judgments = pl.read_parquet(workdir / "results/judgments/tiny.parquet")
    assert judgments.height == pairs.height and set(judgments["id"]) == set(pairs["id"])
    assert loopback.stats()["requests"] - before == 3 * pairs.height
    summary = json.loads((workdir / "results/judgments/tiny.summary.json").read_text())
    assert (summary["calls"], summary["pairs"], summary["queries"]) == (3 * pairs.height, pairs.height, 8)
    assert sum(summary["samples_by_status"].values()) == 3 * pairs.height
    print(f"calls per query: {3 * pairs.height / 8:.2f} ({pairs.height} pairs of 8 queries, 3 kinds)")

    before = loopback.stats()["requests"]
    run_snakemake(workdir, "--cores", "2", "--forcerun", "judge_documents", *JUDGE)
    assert loopback.stats()["requests"] == before, "a rerun must be answered from the cache"
    rerun = json.loads((workdir / "results/judgments/tiny.summary.json").read_text())
    assert (rerun["calls"], rerun["cache_hits"]) == (0, 3 * pairs.height)


def test_the_analysis_correlates_the_judgment_measures(workdir, loopback):
    run_snakemake(workdir, "--cores", "2", *JUDGE)
    run_snakemake(workdir, "--cores", "2", *ANALYSIS)
    correlations = pl.read_parquet(workdir / "results/analysis/correlations_fit.parquet")
    differences = pl.read_parquet(workdir / "results/analysis/differences_fit.parquet")
    for measure in ("eRAG_P", "eRAG_success", "UDCG", "T_umbrela", "P_umbrela", "nDCG_umbrela", "RR@K", "AP@K"):
        rows = correlations.filter(pl.col("measure") == measure, pl.col("target") == "grade")
        assert rows.height and (rows["n_samples"] >= 4).all(), measure
    assert {"eRAG_P-T", "UDCG-T", "T_umbrela-T"} <= set(differences["difference"])
    agreement = pl.read_parquet(workdir / "results/analysis/umbrela_agreement.parquet")
    assert agreement["subset"].to_list() == ["S", "all"]
    total = agreement.filter(pl.col("subset") == "all").row(0, named=True)
    assert total["n"] + total["n_unlabelled"] == _pairs(workdir).height
    summary = json.loads((workdir / "results/llm_summary.json").read_text())
    assert summary["stages"]["judge_documents"]["requests"] >= 3 * _pairs(workdir).height
