"""The LLM rules in Snakemake against the loopback server: outputs, run summary, exact staleness
(a prompt or model change replans exactly its dependent targets) and zero-call reruns.

The upstream stages are replaced by synthetic texts and ranked files (``--allowed-rules``)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import llm_config, llm_workdir, loopback_model, planned_files, run_snakemake
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.testing.synthetic import synthetic_ranked, synthetic_texts

pytestmark = pytest.mark.workflow

LLM_RULES = ("--allowed-rules", "answer_ideal", "answer_topk", "grade", "merge_graded", "llm_summary")
GRADED = "results/graded/tiny/ML6/Nc5_Np2"
SHARD = f"{GRADED}/1-of-1"
TOPK = "results/answers/topk/tiny/ML6/Nc5_Np2/1-of-1"
TARGETS = ("--", "results/llm_summary.json", f"{GRADED}.parquet")


def _planned(workdir: Path) -> set[str]:
    return planned_files(workdir, *LLM_RULES, *TARGETS)


@pytest.fixture(scope="module")
def built(loopback, tmp_path_factory) -> Path:
    texts = synthetic_texts(4).with_columns(p=pl.col("p").list.head(2))
    workdir = llm_workdir(tmp_path_factory.mktemp("llm_workflow"), llm_config(loopback_model(loopback.base_url)),
                          {"tiny": texts})
    run_snakemake(workdir, "--cores", "2", *LLM_RULES, *TARGETS)
    return workdir


def _copy(built: Path, tmp_path: Path, edit=None) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(built, copy, symlinks=True)
    if edit:
        config = yaml.safe_load((copy / "config.yaml").read_text())
        edit(config)
        (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def test_outputs_and_run_summary(built, loopback):
    graded = pl.read_parquet(built / f"{GRADED}.parquet")
    assert graded.height == 12 and (graded["status"] == "graded").all()
    records = json.loads((built / f"{GRADED}.json").read_text())
    assert [r["grade"] for r in records] == graded["grade"].to_list()
    summary = json.loads((built / "results/llm_summary.json").read_text())
    assert set(summary["stages"]) == {"answer_ideal", "answer_topk", "grade"}
    assert summary["stages"]["grade"]["samples_by_status"] == {"graded": 12}
    total = summary["total"]
    assert total["calls"] == loopback.stats()["requests"] == 4 + 12 + 12
    assert total["cache_hits"] == 0 and total["failures_by_reason"] == {}
    assert all(stage["seconds"] > 0 for stage in summary["stages"].values())
    written = [p for folder in ("results", "logs", ".snakemake") for p in (built / folder).rglob("*") if p.is_file()]
    assert written and not any(b"loopback-key" in p.read_bytes() for p in written), "the API key leaked to a file"
    assert _planned(built) == set()


def test_changing_the_grader_replans_only_grades(built, tmp_path):
    copy = _copy(built, tmp_path, lambda c: c["llm"]["grader"].update({"temperature": 0.5}))
    assert _planned(copy) == {f"{SHARD}.parquet", f"{SHARD}.summary.json", f"{GRADED}.parquet", f"{GRADED}.json",
                              "results/llm_summary.json"}


def test_changing_the_answer_prompt_replans_answers_and_grades(built, tmp_path):
    copy = _copy(built, tmp_path)
    prompt = copy / "prompts/answer.txt"
    prompt.write_text(prompt.read_text().replace("at most three sentences", "at most two sentences"))
    assert _planned(copy) == {
        "results/answers/ideal/tiny.parquet", "results/answers/ideal/tiny.summary.json",
        f"{TOPK}.parquet", f"{TOPK}.summary.json", f"{SHARD}.parquet", f"{SHARD}.summary.json",
        f"{GRADED}.parquet", f"{GRADED}.json", "results/llm_summary.json"}


def test_changing_pacing_replans_nothing_and_a_forced_regrade_costs_no_call(built, loopback, tmp_path):
    copy = _copy(built, tmp_path, lambda c: c["llm"]["pacing"].update({"concurrency": 2}))
    assert _planned(copy) == set()
    before = loopback.stats()["requests"]
    run_snakemake(copy, "--cores", "2", "--forcerun", "grade", *LLM_RULES, *TARGETS)
    assert loopback.stats()["requests"] == before
    grade_job = json.loads((copy / f"{SHARD}.summary.json").read_text())
    assert (grade_job["calls"], grade_job["cache_hits"], grade_job["requests"]) == (0, 12, 12)
    assert pl.read_parquet(copy / f"{GRADED}.parquet").equals(pl.read_parquet(built / f"{GRADED}.parquet"))


def test_shards_split_the_work_and_merge_to_the_same_graded_file(built, loopback, tmp_path):
    copy = _copy(built, tmp_path, lambda c: c["llm"].update({"shards": 3}))
    before = loopback.stats()["requests"]
    run_snakemake(copy, "--cores", "2", *LLM_RULES, *TARGETS)
    assert loopback.stats()["requests"] == before, "every prompt is already in the cache"
    shards = [pl.read_parquet(copy / f"{GRADED}/{i}-of-3.parquet") for i in (1, 2, 3)]
    assert sum(shard.height for shard in shards) == 12
    assert len(set().union(*(set(shard["id"]) for shard in shards))) == 4
    assert all(not set(a["id"]) & set(b["id"]) for i, a in enumerate(shards) for b in shards[i + 1:])
    assert pl.read_parquet(copy / f"{GRADED}.parquet").equals(pl.read_parquet(built / f"{GRADED}.parquet"))


@pytest.mark.parametrize("added", [1, 2])
def test_adding_datasets_plans_no_job_of_the_first(built, tmp_path, added):
    """A one-dataset run gets more datasets: only their chains and the pre-LLM check run, no LLM
    job of the first dataset (its jobs had the check as an input from the start); the check is a
    checkpoint, so one run builds the new chains after it."""
    names = [f"more{i}" for i in range(added)]

    def edit(config):
        config["datasets"].update({name: {"layout": "generic", "path": f"{name}.jsonl"} for name in names})

    copy = _copy(built, tmp_path, edit)
    for number, name in enumerate(names, start=1):
        (copy / f"{name}.jsonl").write_text("")
        texts = synthetic_texts(3, seed=number).with_columns(
            p=pl.col("p").list.head(2), id=pl.format(f"{name}-{{}}", pl.int_range(pl.len())))
        write_parquet(texts, copy / f"results/texts/{name}.parquet")
        write_parquet(synthetic_ranked(texts, "ML6", 5, 2, [1, 2, 3], seed=number),
                      copy / f"results/ranked/{name}/ML6/Nc5_Np2.parquet")
    targets = [f"results/graded/{name}/ML6/Nc5_Np2.parquet" for name in ["tiny", *names]]
    rules = ("--allowed-rules", "check_dataset_ids", *LLM_RULES[1:], "--", *targets)
    planned = planned_files(copy, *rules)
    assert not {path for path in planned if "/tiny" in path}, planned
    assert "results/texts/ids_checked.json" in planned
    before = (copy / f"{GRADED}.parquet").stat().st_mtime_ns
    proc = run_snakemake(copy, "--cores", "2", *rules)
    ran = re.findall(r"^\s*output: (\S+?),?$", proc.stdout + proc.stderr, re.MULTILINE)
    assert ran and not [path for path in ran if "/tiny" in path], ran
    assert (copy / f"{GRADED}.parquet").stat().st_mtime_ns == before
    assert all((copy / target).exists() for target in targets)  # the check re-plans the new chains after it
