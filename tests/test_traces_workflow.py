"""Traces through Snakemake against the loopback server: prepare_traces, judge_documents (one call per
distinct (query, document) and kind, none on a rerun), grade_traces, collect_traces and the verdict,
which reports the measures needing Np as not computable, and the run summary; a bad traces file stops the run at start-up
with one line per bad record and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import llm_config, llm_workdir, run_snakemake
from retrieval_response.measures.registry import NEEDS_NP, NOT_COMPUTABLE

pytestmark = pytest.mark.workflow

KINDS = ["udcg", "umbrela"]


def _traces(n_queries: int) -> list[dict]:
    """Two systems over a shared pool of documents: bm25 ranks d0..d2, dense d1..d3 of each query."""
    records = []
    for q in range(n_queries):
        docs = [{"id": f"q{q}-d{i}", "text": f"passage {i} about topic {q}"} for i in range(4)]
        for system, picked in (("bm25", docs[:3]), ("dense", docs[1:])):
            records.append({"query_id": f"q{q}", "query": f"what about topic {q}?", "docs": picked,
                            "answer": f"{system} says topic {q}", "feedback": ["down", "up"][(q + len(system)) % 2],
                            "gold": f"topic {q}", "system": system})
    return records


@pytest.fixture(scope="module")
def workdir(loopback_llm, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("traces_workflow")
    (root / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _traces(10)))
    config = llm_config(
        loopback_llm, prompts=("answer", "grade", "grade_gold", "grade_context", "udcg", "umbrela"),
        datasets={"prod": {"layout": "traces", "path": "traces.jsonl", "feedback_labels": {"up": 1, "down": 0},
                           "trace_grades": ["retrieved"]}},
        document_judgments={"kinds": KINDS},
        analysis={"alpha_grid": "linear:5", "min_segment_samples": 5, "bootstrap_resamples": 100})
    return llm_workdir(root, config)


LLM_OUTPUTS = ("results/judgments/prod.summary.json", "results/traces/prod/grades.summary.json")


def test_traces_are_judged_once_per_pair_and_kind_and_the_verdict_says_what_needs_np(workdir, loopback):
    before = loopback.stats()["requests"]
    run_snakemake(workdir, "--cores", "2")  # the default target: verdict, traces report, run summary
    pairs = 10 * 4  # distinct (query, document): the two systems share d1 and d2 of each query
    summary = json.loads((workdir / LLM_OUTPUTS[0]).read_text())
    assert (summary["pairs"], summary["calls"]) == (pairs, pairs * len(KINDS))
    grades = json.loads((workdir / LLM_OUTPUTS[1]).read_text())
    assert grades["calls"] >= 20, "20 traces graded against their texts"
    assert loopback.stats()["requests"] - before == summary["calls"] + grades["calls"]

    graded = pl.read_parquet(workdir / "results/analysis/graded.parquet")
    assert graded.height == 20 and set(graded["E"]) == {"bm25", "dense"} and graded["Np"].is_null().all()
    assert set(graded["feedback"]) == {0.0, 1.0} and graded["grade_context"].is_not_null().all()
    assert graded["time"].is_null().all() and not (workdir / "results/analysis/monitor.parquet").exists(), \
        "traces without a time are not monitored"
    verdict = pl.read_parquet(workdir / "results/analysis/verdict.parquet")
    assert set(verdict["segment"]) == {"all"}
    for name in ("F", "R", "nDCG@K", "AP@K"):
        rows = verdict.filter(pl.col("measure") == name, pl.col("target") == "feedback")
        assert rows.height and (rows["reason"] == NOT_COMPUTABLE).all(), name
    report = json.loads((workdir / "results/analysis/traces.json").read_text())
    assert set(report["not_computable"]) == set(NEEDS_NP) and "RR@K" in report["computed"]
    assert "UDCG" in report["computed"] and not [m for m in report["computed"] if m.startswith("eRAG")], \
        "a judgment measure is computed only when its kind was judged"
    assert report["datasets"]["prod"]["left_out"] == {"unlabelled": 0}
    run = json.loads((workdir / "results/run_summary.json").read_text())
    assert set(run["stage_times"]) == {"prepare_traces", "judge_documents", "grade_traces", "collect_traces",
                                       "correlations", "verdict", "figures"}
    assert run["total"]["calls"] == summary["calls"] + grades["calls"]

    # the LLM jobs alone, forced (the analysis after them makes no call)
    before = loopback.stats()["requests"]
    run_snakemake(workdir, "--cores", "2", *LLM_OUTPUTS, "--forcerun", "judge_documents", "grade_traces")
    assert loopback.stats()["requests"] == before, "a rerun is answered from the cache"
    rerun = json.loads((workdir / LLM_OUTPUTS[0]).read_text())
    assert (rerun["calls"], rerun["cache_hits"]) == (0, pairs * len(KINDS))


def test_a_bad_traces_file_stops_the_run_at_start_up_with_one_line_per_record(workdir):
    run = workdir / "bad_run"
    run.mkdir()
    records = _traces(2)
    records[1]["docs"] = []
    records[2]["feedback"] = "meh"
    (run / "traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "config.yaml").write_text((workdir / "config.yaml").read_text().replace("prompts/", f"{workdir}/prompts/"))
    proc = run_snakemake(run, "--cores", "1", check=False)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "traces.jsonl: " in line]
    assert lines == [
        "traces.jsonl: line 2: docs is empty: a trace needs the documents the answer was written from",
        "traces.jsonl: line 3: feedback must be a number or a label that the dataset's feedback_labels maps to "
        "one: label 'meh' is not mapped (mapped now: down, up)"], proc.stderr
    written = {p.name for p in run.iterdir()} - {"config.yaml", "traces.jsonl", ".snakemake"}
    assert not written, "nothing is written"
