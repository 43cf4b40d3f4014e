"""A dataset of the ir_datasets layout in the workflow: refused at start-up while it is not cached
and downloads are off; prepared from the cache, with no network and no input file, once it is."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import polars as pl
import pytest
import yaml

from conftest import run_snakemake
from retrieval_response.datasets.layouts import corpus_table, prepare
from test_datasets_judged_corpus import CORPUS, beir_folder
from test_workflow_rankers import LLM

pytestmark = pytest.mark.workflow

DATASET_ID = "beir/scifact/test"


def cache_scifact(home: Path, folder: Path) -> None:
    """Place ``folder`` (a BEIR folder) where ir_datasets keeps its download of BEIR's scifact."""
    archive = home / "beir" / "scifact" / "source.zip"
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
            zipped.write(folder / name, f"scifact/{name}")


def test_an_ir_datasets_dataset_is_read_from_the_cache_only(tmp_path, monkeypatch):
    home = tmp_path / "ir_datasets_home"
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")  # a download attempt would fail, not reach out
    monkeypatch.setenv("RR_LOOPBACK_KEY", "loopback-key")
    config = {
        "datasets": {"scifact": {"layout": "ir_datasets", "ir_datasets_id": DATASET_ID}},
        "designs": [{"Nc": 2, "Np": 1}],
        "K": [1],
        "rankers": {"BM25": {"backend": "bm25"}},
        "llm": LLM,
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))

    proc = run_snakemake(tmp_path, "-n", check=False)
    assert proc.returncode == 1
    expected = (f"config key datasets.scifact.ir_datasets_id: ir_datasets '{DATASET_ID}' is not in the ir_datasets "
                f"cache ({home}) and downloads are off: set 'models.allow_downloads: true'")
    assert [line for line in proc.stderr.splitlines() if expected in line], proc.stderr[-2000:]

    corpus = [{**record, "_id": str(record["_id"]), "title": record.get("title", "")} for record in CORPUS]
    qrels = beir_folder(tmp_path / "beir", corpus=corpus)
    cache_scifact(home, qrels.parent.parent)
    run_snakemake(tmp_path, "--cores", "1", "results/texts/scifact.parquet")
    texts = pl.read_parquet(tmp_path / "results/texts/scifact.parquet")
    expected, _ = prepare("beir", qrels, n_queries=None, seed=0, designs=[(2, 1)])
    assert texts["source_id"].to_list() == ["q1"]  # the one query with a negative
    assert texts.drop("id", "subset").equals(expected.drop("id", "subset"))
    report = json.loads((tmp_path / "results/texts/scifact.report.json").read_text())
    assert (report["source"], report["layout"]) == (DATASET_ID, "ir_datasets")


def test_an_ir_datasets_corpus_is_retrieved_from_like_its_beir_folder(tmp_path, monkeypatch):
    """retrieval: corpus on an ir_datasets id: the corpus table is the BEIR folder's, and BM25's top
    documents are those that the same dataset given as a BEIR folder gets."""
    home = tmp_path / "ir_datasets_home"
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    monkeypatch.setenv("RR_LOOPBACK_KEY", "loopback-key")
    corpus = [{**record, "_id": str(record["_id"]), "title": record.get("title", "")} for record in CORPUS]
    qrels = beir_folder(tmp_path / "beir", corpus=corpus)
    cache_scifact(home, qrels.parent.parent)
    corpus_level = {"retrieval": "corpus", "K": [1, 2]}
    config = {
        "datasets": {"scifact": {"layout": "ir_datasets", "ir_datasets_id": DATASET_ID, **corpus_level},
                     "folder": {"layout": "beir", "path": str(qrels.relative_to(tmp_path)), **corpus_level}},
        "rankers": {"BM25": {"backend": "bm25"}},
        "llm": LLM,
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(tmp_path, "--cores", "1", *(f"results/ranked/{d}/BM25/corpus.texts.parquet" for d in ("scifact", "folder")))
    assert pl.read_parquet(tmp_path / "results/corpus/scifact.parquet").equals(corpus_table("beir", qrels))
    retrieved = [pl.read_parquet(tmp_path / f"results/ranked/{d}/BM25/corpus.texts.parquet") for d in ("scifact", "folder")]
    assert retrieved[0].height > 0
    assert retrieved[0].drop("id", "subset").equals(retrieved[1].drop("id", "subset"))
