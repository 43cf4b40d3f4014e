"""The `ranked` target with rankers that embed nothing: BM25 and a dataset's own TREC run file."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import planned_files, run_snakemake
from retrieval_response.datasets.layouts import read_texts
from test_run_file import N_QUERIES, beir_folder

pytestmark = pytest.mark.workflow

LLM = {
    role: {"model": "openai/loopback", "api_base": "http://127.0.0.1:8765/v1", "api_key_env": "RR_LOOPBACK_KEY"}
    for role in ("generator", "grader")
}


def workdir_with_run(tmp_path: Path, run_lines: list[str]) -> Path:
    qrels = beir_folder(tmp_path / "data" / "beir")
    (tmp_path / "data" / "mine.trec").write_text("\n".join(run_lines) + "\n")
    config = {
        "datasets": {"judged": {"layout": "beir", "path": str(qrels.relative_to(tmp_path)), "run": "data/mine.trec"}},
        "designs": [{"Nc": 5, "Np": 2}],
        "K": [1, 2, 3],
        "rankers": {"BM25": {"backend": "bm25"}},
        "llm": LLM,
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    os.environ.setdefault("RR_LOOPBACK_KEY", "loopback-key")  # named by the models, which `ranked` never calls
    return tmp_path


def reversed_run() -> list[str]:
    """A run that ranks each query's candidates in reverse candidate order (negatives first)."""
    order = ["d5", "d4", "d3", "d1", "d0"]
    return [f"q{q} Q0 q{q}{doc} {r} {10 - r} MyRetriever" for q in range(N_QUERIES) for r, doc in enumerate(order, 1)]


def test_bm25_and_a_run_rank_a_judged_corpus_without_embedding(tmp_path):
    workdir = workdir_with_run(tmp_path, reversed_run())
    planned = planned_files(workdir, "ranked")
    assert not any(path.startswith("results/embeddings/") for path in planned)
    assert "results/ranked/judged/MyRetriever/Nc5_Np2.parquet" in planned
    run_snakemake(workdir, "--cores", "1", "ranked")
    by_run = pl.read_parquet(workdir / "results/ranked/judged/MyRetriever/Nc5_Np2.parquet")
    assert by_run["E"].unique().to_list() == ["MyRetriever"]
    assert by_run["rank"].to_list() == [[4, 3, 2, 1, 0]] * N_QUERIES
    assert by_run["P"].to_list() == [[0.0, 0.0, 0.0]] * N_QUERIES
    by_bm25 = pl.read_parquet(workdir / "results/ranked/judged/BM25/Nc5_Np2.parquet")
    assert by_bm25.height == N_QUERIES
    texts = read_texts("beir", workdir / "data/beir/qrels/test.tsv")
    assert by_bm25["id"].to_list() == texts["id"].to_list()


def test_a_bad_run_line_stops_the_rank_job_with_one_line_and_writes_nothing(tmp_path):
    lines = reversed_run()
    lines[7] = "q1 Q0 missing 3 7 MyRetriever"
    workdir = workdir_with_run(tmp_path, lines)
    proc = run_snakemake(workdir, "--cores", "1", "results/ranked/judged/MyRetriever/Nc5_Np2.parquet", check=False)
    assert proc.returncode != 0
    expected = "data/mine.trec: line 8: document 'missing' is not in the corpus"
    assert sum(expected in line for line in proc.stderr.splitlines()) >= 1
    assert not (workdir / "results/ranked/judged/MyRetriever").exists() or not any(
        (workdir / "results/ranked/judged/MyRetriever").iterdir())
