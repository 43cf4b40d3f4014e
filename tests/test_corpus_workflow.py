"""Corpus-level retrieval in Snakemake, end to end against the loopback server: BM25, a dense
embedder and a run file each retrieve from a BEIR corpus; the LLM answers from the retrieved texts;
the analysis correlates every ranker's samples and can keep only fully judged top-Ks."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import REPO, planned_files, run_snakemake
from retrieval_response.testing.openai_server import serve_in_subprocess

pytestmark = pytest.mark.workflow

N_QUERIES, K = 8, [1, 2, 3, 4]
TARGETS = ("results/llm_summary.json", "results/analysis/correlations_fit.parquet")


@pytest.fixture(scope="module")
def server():
    os.environ["RR_LOOPBACK_KEY"] = "loopback-key"
    with serve_in_subprocess(latency_s=0.002) as running:
        yield running


def write_beir(root: Path) -> Path:
    """40 documents on 10 topics; each query has 2 positives and 1 judged negative of its topic, so
    rankers find unjudged documents of the same topic too; gold answers in metadata."""
    corpus = [{"_id": f"doc{i}", "title": f"Topic {i % 10}", "text": f"fact {i} about topic {i % 10} and word{i}"}
              for i in range(40)]
    queries = [{"_id": f"q{q}", "text": f"what about topic {q} word{q}", "metadata": {"answers": [f"fact {q}"]}}
               for q in range(N_QUERIES)]
    qrels = ["query-id\tcorpus-id\tscore"]
    qrels += [f"q{q}\tdoc{q + 10 * j}\t{1 if j < 2 else 0}" for q in range(N_QUERIES) for j in range(3)]
    (root / "beir/qrels").mkdir(parents=True)
    (root / "beir/corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "beir/queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "beir/qrels/test.tsv").write_text("\n".join(qrels) + "\n")
    # a run that puts each query's own word document first, then documents in id order
    run = [f"q{q} Q0 doc{d} {r + 1} {100 - r} mine"
           for q in range(N_QUERIES) for r, d in enumerate([q] + [d for d in range(12) if d != q])]
    (root / "mine.run").write_text("\n".join(run) + "\n")
    return root


@pytest.fixture(scope="module")
def workdir(server, tmp_path_factory) -> Path:
    workdir = write_beir(tmp_path_factory.mktemp("corpus_workflow"))
    shutil.copytree(REPO / "resources/prompts", workdir / "prompts")
    model = {"model": "openai/loopback", "api_base": server.base_url, "api_key_env": "RR_LOOPBACK_KEY"}
    config = {
        "datasets": {"corpus": {"layout": "beir", "path": "beir/qrels/test.tsv", "retrieval": "corpus", "K": K,
                                "rankers": ["BM25", "PML3"], "run": "mine.run"}},
        "rankers": {"BM25": {"backend": "bm25"}, "PML3": {"backend": "paraphrase_minilm_l3_onnx"}},
        "llm": {"generator": {**model, "max_tokens": 50}, "grader": {**model, "max_tokens": 4, "logprobs": True},
                "cache": "results/llm_cache", "pacing": {"concurrency": 4},
                "prompts": {name: f"prompts/{name}.txt" for name in ("answer", "grade")}},
        "analysis": {"segmentations": ["fit"], "alpha_grid": "linear:5", "min_segment_samples": 4,
                     "bootstrap_resamples": 20},
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--cores", "2", *TARGETS)
    return workdir


def test_every_ranker_retrieves_from_the_whole_corpus(workdir):
    for code in ("BM25", "PML3", "mine"):
        ranked = pl.read_parquet(workdir / f"results/ranked/corpus/{code}/corpus.parquet")
        candidates = pl.read_parquet(workdir / f"results/ranked/corpus/{code}/corpus.texts.parquet")
        assert ranked.height == N_QUERIES, code
        assert (ranked["Np"] == 2).all() and (ranked["Nc"] >= 2 * max(K)).all(), code
        # the retrieved documents beyond the positives include unjudged ones of other queries
        assert candidates["n_judged"].explode().sum() < candidates["n_judged"].explode().len(), code
    first = pl.read_parquet(workdir / "results/ranked/corpus/mine/corpus.texts.parquet").row(0, named=True)
    assert first["n_doc"][:3] == ["doc1", "doc2", "doc3"]  # the run's order after the positive doc0


def test_answers_are_written_from_the_retrieved_texts(workdir, server):
    graded = pl.read_parquet(workdir / "results/analysis/graded.parquet")
    assert graded.height == 3 * N_QUERIES * len(K)
    assert set(graded["E"]) == {"BM25", "PML3", "mine"}
    assert graded["judged"].min() < 1 and graded["judged"].max() == 1
    assert graded["answer_f1"].is_not_null().all()  # gold answers from the BEIR metadata
    summary = json.loads((workdir / "results/llm_summary.json").read_text())
    assert summary["stages"]["answer_topk"]["samples"] == 3 * N_QUERIES * len(K)
    correlations = pl.read_parquet(workdir / "results/analysis/correlations_fit.parquet")
    assert set(correlations["E"]) >= {"BM25", "PML3", "mine"}


def test_judged_only_keeps_the_fully_judged_top_ks(workdir):
    graded = pl.read_parquet(workdir / "results/analysis/graded.parquet")
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["analysis"]["judged_only"] = True
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    try:
        planned = planned_files(workdir, *TARGETS)
        run_snakemake(workdir, "--cores", "2", *TARGETS)
        kept = pl.read_parquet(workdir / "results/analysis/graded.parquet")
    finally:
        config["analysis"]["judged_only"] = False
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    assert kept.height == graded.filter(pl.col("judged") == 1).height < graded.height
    assert "results/analysis/graded.parquet" in planned
    assert not [path for path in planned if path.startswith(("results/answers", "results/graded", "results/ranked"))]


@pytest.mark.parametrize("edited, old, new", [("beir/corpus.jsonl", "topic 1", "topic one"),
                                              ("beir/queries.jsonl", "topic 1", "topic one"),
                                              ("beir/qrels/test.tsv", "q1\tdoc21\t0", "q1\tdoc21\t1")])
def test_editing_any_file_of_the_beir_folder_replans_its_readers(workdir, tmp_path, edited, old, new):
    """An edit of its content (Snakemake ignores a newer time stamp on a small input whose checksum
    did not change) replans the rules that read the file."""
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, symlinks=True)
    path = copy / edited
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    planned = planned_files(copy, *TARGETS)
    assert {"results/texts/corpus.parquet", "results/corpus/corpus.parquet"} <= planned
