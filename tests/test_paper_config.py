"""config/paper.yaml: the paper's embedders and LLM, a dry run on stand-in data, and its cost estimate.

The published samples_texts.json is not here (users download it), so the tests write a small
stand-in in the published layout: every subset of the paper, with positives and negatives enough
for one, two or all three designs. Nothing is downloaded and no LLM is called.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO, run_snakemake
from retrieval_response.reports import llm_cost

PAPER = REPO / "config" / "paper.yaml"
SUBSETS = ["A", "Hp-e", "Hp-m", "Hp-h", "Hs-e", "Hs-m", "Hs-h", "M", "N"]


def write_stand_in(folder: Path) -> Path:
    """data/samples_texts.json with two queries per subset: arXiv-like queries (12 positives, 25
    negatives) serve all three designs, Hs-like ones (5, 10) the first two, the others (2, 10) the first."""
    records = []
    for subset in SUBSETS:
        positives, negatives = (12, 25) if subset == "A" else (5, 10) if subset.startswith("Hs") else (2, 10)
        for i in range(2):
            records.append({
                "id": f"{subset}-{i}",
                "q": f"what is item {i} of {subset}?",
                "p": [f"relevant text {j} about item {i} of {subset}" for j in range(positives)],
                "n": [f"unrelated text {j} near item {i} of {subset}" for j in range(negatives)],
            })
    path = folder / "data" / "samples_texts.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(records))
    return path


@pytest.mark.unit
def test_paper_config_has_the_papers_embedders_llm_and_analysis():
    config = yaml.safe_load(PAPER.read_text())
    models = {code: entry["model"] for code, entry in config["rankers"].items()}
    assert models == {
        "AML12v2": "sentence-transformers/all-MiniLM-L12-v2",
        "E5Sv2": "intfloat/e5-small-v2",
        "ME5S": "intfloat/multilingual-e5-small",
        "MQML6Cv1": "sentence-transformers/multi-qa-MiniLM-L6-cos-v1",
    }
    assert {entry["backend"] for entry in config["rankers"].values()} == {"sentence_transformers"}
    assert config["models"]["allow_downloads"] is True
    assert config["llm"]["generator"]["model"] == config["llm"]["grader"]["model"] == "openai/gpt-4o-mini"
    assert [d["layout"] for d in config["datasets"].values()] == ["published_texts"]
    designs = config["designs"]
    assert {d["Np"] for d in designs} <= set(range(2, 16)) and max(max(d["K"]) for d in designs) == 15
    assert all(min(d["K"]) < d["Np"] <= max(d["K"]) for d in designs)  # K below and above Np
    assert config["analysis"]["min_segment_samples"] == 300


@pytest.mark.workflow
def test_paper_config_dry_runs_on_stand_in_data(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "not-used-by-a-dry-run")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the config allows downloads; a dry run makes none
    write_stand_in(tmp_path)
    shutil.copy(PAPER, tmp_path / "config.yaml")
    proc = run_snakemake(tmp_path, "-n", "--quiet", "rules")
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout, re.MULTILINE))
    shards = yaml.safe_load(PAPER.read_text())["llm"]["shards"]
    assert counts["embed"] == "4" and counts["rank"] == "12"  # 4 embedders x 3 designs
    assert counts["answer_topk"] == counts["grade"] == str(12 * shards)
    assert not (tmp_path / "results").exists()


@pytest.mark.unit
def test_cost_is_counted_on_the_configs_data(tmp_path):
    write_stand_in(tmp_path)
    config = yaml.safe_load(PAPER.read_text())
    est = llm_cost.estimate(config, tmp_path, answer_tokens=80)
    stages = est.workload.stages
    # ideal answers per (query, Np): A 2 x 3, Hs 6 x 2, the other 10 queries 1 each
    assert stages["ideal"].calls == 6 + 12 + 10
    # per embedder: A 2 x (10 + 15 + 14) K values, Hs 6 x (10 + 15), the others 10 x 10
    assert stages["topk"].calls == stages["grade"].calls == 4 * (78 + 150 + 100)
    assert stages["topk"].completion_tokens == 80 * stages["topk"].calls
    assert stages["grade"].completion_tokens == stages["grade"].calls
    # K references per top-K prompt (K = 1..15, about 8 on average) against Np (2, 5 or 10) per ideal one
    assert stages["topk"].prompt_tokens / stages["topk"].calls > stages["ideal"].prompt_tokens / stages["ideal"].calls
    prompt_dollars, completion_dollars = est.dollars()
    assert prompt_dollars == pytest.approx(est.workload.prompt_tokens * 0.15e-6, rel=1e-3)
    assert completion_dollars == pytest.approx(est.workload.completion_tokens * 0.60e-6, rel=1e-3)
    last = llm_cost.report(est, "config/paper.yaml").splitlines()[-1]
    assert re.fullmatch(r"calls=2652 prompt_tokens=\d+ completion_tokens=108512 dollars=\d+\.\d\d", last)


@pytest.mark.unit
def test_cost_without_the_data_uses_the_published_counts(tmp_path):
    est = llm_cost.estimate(yaml.safe_load(PAPER.read_text()), tmp_path)
    stages = est.workload.stages
    assert "published" in est.basis
    assert stages["topk"].calls == stages["grade"].calls == 535_888 and stages["ideal"].calls == 10_748
    per_answer = stages["topk"].prompt_tokens / stages["topk"].calls
    assert 200 < per_answer < 3000  # instructions, a question and K = 1..15 real references
