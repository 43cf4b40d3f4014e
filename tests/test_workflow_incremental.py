"""Incremental reruns, proved from Snakemake's own dry-run output on a real run's outputs.

Adding an embedder or a dataset plans only the new targets; changing one dataset's source
re-plans only that dataset's chain.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import planned_files, run_snakemake, shared_config

pytestmark = pytest.mark.workflow


def write_source(path: Path, prefix: str, n_queries: int) -> None:
    """A generic JSON-lines dataset: 3 positives, 5 negatives per query."""
    with path.open("w") as f:
        for i in range(n_queries):
            f.write(json.dumps({
                "id": f"{prefix}-{i}",
                "q": f"What is special about {prefix} item {i}?",
                "p": [f"{prefix} item {i} is special because of fact {j}." for j in range(3)],
                "n": [f"An unrelated sentence number {j} about weather {i}." for j in range(5)],
            }) + "\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A workdir where the two datasets of the smoke config (.test/config_smoke.yaml) have been
    prepared, embedded and ranked with its one embedder (the ``ranked`` target: no LLM call)."""
    workdir = tmp_path_factory.mktemp("incremental")
    config = shared_config("config_smoke", workdir)
    assert sorted(config["datasets"]) == ["alpha", "beta"] and list(config["rankers"]) == ["ML6"]
    write_source(workdir / "gamma.jsonl", "gamma", 4)
    os.environ.setdefault("RR_LOOPBACK_KEY", "loopback-key")  # named by its models, which `ranked` never calls
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--cores", "2", "ranked")
    assert planned_files(workdir, "ranked") == set(), "a finished workflow must plan nothing"
    return workdir


def with_config(workdir: Path, tmp_path: Path, edit) -> Path:
    """A copy of ``workdir`` (outputs and Snakemake metadata included) with its config edited."""
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, symlinks=True)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    edit(config)
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    return copy


def test_adding_an_embedder_plans_only_its_targets(built, tmp_path):
    copy = with_config(built, tmp_path, lambda c: c["rankers"].update({"PML3": {"backend": "paraphrase_minilm_l3_onnx"}}))
    assert planned_files(copy, "ranked") == {
        "results/embeddings/PML3/alpha.parquet",
        "results/embeddings/PML3/beta.parquet",
        "results/ranked/alpha/PML3/Nc5_Np2.parquet",
        "results/ranked/alpha/PML3/Nc5_Np2.report.json",
        "results/ranked/beta/PML3/Nc5_Np2.parquet",
        "results/ranked/beta/PML3/Nc5_Np2.report.json",
    }


def test_adding_a_dataset_plans_only_its_chain(built, tmp_path):
    copy = with_config(built, tmp_path, lambda c: c["datasets"].update({"gamma": {"layout": "generic", "path": "gamma.jsonl"}}))
    assert planned_files(copy, "ranked") == {
        "results/texts/gamma.parquet",
        "results/texts/gamma.report.json",
        "results/embeddings/ML6/gamma.parquet",
        "results/ranked/gamma/ML6/Nc5_Np2.parquet",
        "results/ranked/gamma/ML6/Nc5_Np2.report.json",
    }


def test_changing_one_source_replans_only_that_chain(built, tmp_path):
    copy = with_config(built, tmp_path, lambda c: None)
    write_source(copy / "data/beta.jsonl", "beta", 5)
    assert planned_files(copy, "ranked") == {
        "results/texts/beta.parquet",
        "results/texts/beta.report.json",
        "results/embeddings/ML6/beta.parquet",
        "results/ranked/beta/ML6/Nc5_Np2.parquet",
        "results/ranked/beta/ML6/Nc5_Np2.report.json",
    }
