"""Two BEIR folders and two TREC datasets in one config, end to end against the loopback server:
each numbers its queries under its own subset, so their ids never meet and every table keeps
them apart; one BEIR dataset is named by its folder and a split, and a run gives one query fewer
documents than max(K)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO, loopback_model, run_snakemake

pytestmark = pytest.mark.workflow

N_QUERIES, K = 5, [1, 2, 3, 4]
TARGETS = ("results/llm_summary.json", "results/analysis/graded.parquet")
SUBSETS = {"sci": "sci", "nf": "nf", "robust": "rob", "core": "core"}


def judged_files(root: Path, layout: str, topic: str, split: str = "test") -> None:
    """A corpus of 30 documents on ``topic``; each query has 2 positives and 3 judged negatives."""
    docs = [(f"{topic}{i}", f"{topic} fact {i} word{i % 10}") for i in range(30)]
    queries = [(f"{topic}-q{q}", f"what about {topic} word{q}") for q in range(N_QUERIES)]
    judged = [(q, f"{topic}{q + 10 * j}", 1 if j < 2 else 0) for q in range(N_QUERIES) for j in range(3)]
    judged += [(q, f"{topic}{(q + 5) % 10 + 20}", 0) for q in range(N_QUERIES)]
    judged += [(q, f"{topic}{(q + 6) % 10 + 20}", 0) for q in range(N_QUERIES)]
    root.mkdir(parents=True)
    if layout == "beir":
        (root / "qrels").mkdir()
        (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in docs))
        (root / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries))
        lines = ["query-id\tcorpus-id\tscore", *(f"{queries[q][0]}\t{d}\t{g}" for q, d, g in judged)]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    else:
        (root / "documents.tsv").write_text("".join(f"{i}\t{t}\n" for i, t in docs))
        (root / "queries.tsv").write_text("".join(f"{i}\t{t}\n" for i, t in queries))
        (root / "qrels.txt").write_text("".join(f"{queries[q][0]} 0 {d} {g}\n" for q, d, g in judged))


@pytest.fixture(scope="module")
def workdir(loopback, tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("two_corpora")
    judged_files(workdir / "sci", "beir", "sci")
    judged_files(workdir / "nf", "beir", "nf", split="dev")
    judged_files(workdir / "robust", "trec", "robust")
    judged_files(workdir / "core", "trec", "core")
    # a run of the sci corpus: sci-q0 retrieves 2 documents (fewer than max(K)), the others 6
    run = [f"sci-q{q} Q0 sci{d} {r + 1} {50 - r} mine" for q in range(N_QUERIES)
           for r, d in enumerate([q + 10, 29, q, 28, 27, 26][: 2 if q == 0 else 6])]
    (workdir / "sci.run").write_text("\n".join(run) + "\n")
    shutil.copytree(REPO / "resources/prompts", workdir / "prompts")
    model = loopback_model(loopback.base_url)
    corpus = {"retrieval": "corpus", "K": K}
    config = {
        "datasets": {
            "sci": {"layout": "beir", "path": "sci", "subset": "sci", **corpus, "run": "sci.run"},
            "nf": {"layout": "beir", "path": "nf", "split": "dev", "subset": "nf"},
            "robust": {"layout": "trec", "path": "robust/qrels.txt", "subset": "rob", **corpus},
            "core": {"layout": "trec", "path": "core/qrels.txt", "subset": "core"},
        },
        "designs": [{"Nc": 5, "Np": 2}], "K": K,
        "rankers": {"BM25": {"backend": "bm25"}},
        "llm": {"generator": {**model, "max_tokens": 50}, "grader": {**model, "max_tokens": 4, "logprobs": True},
                "cache": "results/llm_cache", "pacing": {"concurrency": 4},
                "prompts": {name: f"prompts/{name}.txt" for name in ("answer", "grade")}},
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--cores", "2", *TARGETS)
    return workdir


def test_each_dataset_keeps_its_own_subset_in_every_table(workdir):
    for name, subset in SUBSETS.items():
        texts = pl.read_parquet(workdir / f"results/texts/{name}.parquet")
        assert set(texts["subset"]) == {subset} and texts["id"].str.starts_with(f"{subset}-").all(), name
        for path in (workdir / "results/ranked" / name).rglob("*.parquet"):
            table = pl.read_parquet(path)
            assert set(table["subset"]) == {subset} and table["id"].str.starts_with(f"{subset}-").all(), path
        for path in (workdir / "results/graded" / name).rglob("*.parquet"):
            assert set(pl.read_parquet(path)["subset"]) == {subset}, path
    graded = pl.read_parquet(workdir / "results/analysis/graded.parquet")
    by_prefix = graded.select(prefix=pl.col("id").str.split("-").list.first(), subset="subset").unique()
    assert sorted(by_prefix.rows()) == sorted((s, s) for s in SUBSETS.values())
    assert graded.group_by("subset").len().height == 4


def test_the_folder_with_a_split_reads_that_split(workdir):
    report = json.loads((workdir / "results/texts/nf.report.json").read_text())
    assert report["source"].endswith("nf/qrels/dev.tsv")


def test_a_short_run_keeps_every_k_and_answers_from_what_it_retrieved(workdir):
    ranked = pl.read_parquet(workdir / "results/ranked/sci/mine/corpus.parquet")
    short = ranked.filter(pl.col("id") == "sci-0").row(0, named=True)
    assert short["K"] == K and len(short["rank"]) == 2
    assert short["P"] == [1.0, 0.5, 1 / 3, 0.25] and short["R"] == [0.5] * 4  # one positive retrieved of 2
    graded = pl.read_parquet(workdir / "results/analysis/graded.parquet").filter(pl.col("E") == "mine")
    rows = graded.filter(pl.col("id") == "sci-0").sort("K")
    assert rows["K"].to_list() == K and rows["rank"].list.len().to_list() == [1, 2, 2, 2]
    assert rows["np_2K"].to_list() == [1, 1, 1, 1]
