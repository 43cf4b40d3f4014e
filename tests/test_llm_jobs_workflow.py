"""LLM jobs at once under the default profile: a hosted model's jobs hold one unit of the run's
``llm`` cap (``llm.pacing.jobs``) and run side by side (two jobs' calls overlap at the loopback
server), a local model's jobs hold the whole cap and every core, so they run one at a time.

The upstream stages are replaced by synthetic texts (``--allowed-rules``)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from conftest import llm_config, llm_workdir, loopback_model, loopback_server, run_snakemake
from retrieval_response.testing.synthetic import synthetic_texts

pytestmark = pytest.mark.workflow

DATASETS = ("a", "b")
IDEAL = ("--allowed-rules", "answer_ideal", "--", *(f"results/answers/ideal/{d}.parquet" for d in DATASETS))


def _workdir(tmp_path: Path, model: dict) -> Path:
    """Two datasets of 6 queries each, with different questions (one ideal-answer job each, no
    prompt in common; their id check stands as done) and a config of ``model``, one call at a time."""
    config = llm_config(model, K=[1, 2], llm={"pacing": {"concurrency": 1}},
                        datasets={name: {"layout": "generic", "path": f"{name}.jsonl"} for name in DATASETS})
    texts = {name: synthetic_texts(6).with_columns(p=pl.col("p").list.head(2), q=pl.col("q") + f" in {name}")
             for name in DATASETS}
    llm_workdir(tmp_path, config, texts)
    (tmp_path / "results/texts/ids_checked.json").write_text("{}")
    return tmp_path


def _planned_jobs(workdir: Path, *args: str) -> list[dict[str, str]]:
    """Each job of a dry run: its rule, threads and ``llm`` resource, from Snakemake's listing."""
    proc = run_snakemake(workdir, "-n", "--cores", "2", *args, *IDEAL)
    jobs = []
    for block in re.split(r"\n(?=rule \w+:)", proc.stdout + proc.stderr)[1:]:
        llm = re.search(r"^\s+resources: .*\bllm=(\d+)", block, re.M)
        threads = re.search(r"^\s+threads: (\d+)", block, re.M)
        jobs.append({"rule": block.split(":")[0].removeprefix("rule "),
                     "llm": llm and llm.group(1), "threads": threads.group(1) if threads else "1"})
    return jobs


def test_hosted_jobs_hold_one_unit_and_local_jobs_the_whole_cap(tmp_path):
    hosted = _workdir(tmp_path / "hosted", {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"})
    assert _planned_jobs(hosted) == [{"rule": "answer_ideal", "llm": "1", "threads": "1"}] * 2
    local_model = {"model": "llamacpp/m", "model_path": "m.gguf"}
    local = _workdir(tmp_path / "local", local_model)
    (local / "m.gguf").write_bytes(b"")
    assert _planned_jobs(local) == [{"rule": "answer_ideal", "llm": "4", "threads": "2"}] * 2
    assert _planned_jobs(local, "--resources", "llm=2") == [{"rule": "answer_ideal", "llm": "2", "threads": "2"}] * 2


def test_a_cap_above_the_pacing_jobs_is_refused_in_one_line(tmp_path):
    workdir = _workdir(tmp_path, {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"})
    proc = run_snakemake(workdir, "-n", "--cores", "2", "--resources", "llm=5", *IDEAL, check=False)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "llm.pacing.jobs" in line]
    assert len(lines) == 1
    assert lines[0].startswith(f"{workdir}/config.yaml: config key llm.pacing.jobs: --resources llm=5 would run more")


def test_hosted_jobs_run_side_by_side_with_the_default_profile(tmp_path):
    with loopback_server(latency_s=1.0) as server:
        workdir = _workdir(tmp_path, loopback_model(server.base_url))
        proc = run_snakemake(workdir, "--cores", "2", *IDEAL)
        stats = server.stats()
    assert re.search(r"Provided resources: .*llm=\W*(Resource\(\W*llm\W*, )?4\b", proc.stdout + proc.stderr)
    assert stats["requests"] == 2 * 6
    assert stats["max_in_flight"] == 2, "each job has one call in flight: two at once are two jobs"
