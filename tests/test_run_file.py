"""TREC run files as rankings: the round trip through a run, the order rules, one error per bad record."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from retrieval_response.datasets.layouts import corpus_ids, read_texts
from retrieval_response.infra.errors import InputError
from retrieval_response.ranking.cosine_ranking import rank_samples
from retrieval_response.ranking.run_file import rank_from_run, read_run, run_rank_samples, run_tag, write_run

pytestmark = pytest.mark.unit

N_QUERIES, N_POSITIVES, N_NEGATIVES = 6, 3, 6


def beir_folder(root: Path) -> Path:
    """A BEIR folder: 6 queries, each with 3 positives (grades 1-2) and 6 negatives of its own, and
    some unjudged documents; two negatives of each query share a text, so cosines tie."""
    corpus, qrels = [], ["query-id\tcorpus-id\tscore"]
    for q in range(N_QUERIES):
        for d in range(N_POSITIVES + N_NEGATIVES):
            text = f"query {q} document {d}" if d != N_POSITIVES + 1 else f"query {q} document {N_POSITIVES}b"
            corpus.append({"_id": f"q{q}d{d}", "title": "", "text": text})
            qrels.append(f"q{q}\tq{q}d{d}\t{(2 if d == 0 else 1) if d < N_POSITIVES else 0}")
    corpus += [{"_id": f"extra{i}", "text": f"unjudged {i}"} for i in range(3)]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    queries = [{"_id": f"q{q}", "text": f"question {q}"} for q in range(N_QUERIES)]
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return root / "qrels" / "test.tsv"


def fake_encode(strings: list[str], kind: str) -> np.ndarray:
    """Deterministic vectors from a hash of the text (equal texts, equal vectors); ``...b`` texts
    get the vector of the text without ``b``, so they tie with it."""
    rows = []
    for text in strings:
        seed = int.from_bytes(hashlib.blake2b(text.rstrip("b").encode(), digest_size=8).digest(), "little")
        rows.append(np.random.default_rng(seed).standard_normal(8))
    return np.asarray(rows, dtype=np.float32)


@pytest.fixture
def dataset(tmp_path):
    qrels = beir_folder(tmp_path / "beir")
    documents, queries = corpus_ids("beir", qrels)
    return qrels, read_texts("beir", qrels), documents, queries


@pytest.mark.parametrize(("Nc", "Np"), [(5, 2), (9, 3)])
def test_a_ranking_exported_as_a_run_reads_back_as_identical_samples(dataset, tmp_path, Nc, Np):
    qrels, texts, documents, queries = dataset
    ranked, _ = rank_samples(texts, fake_encode, embedder_code="MINE", Nc=Nc, Np=Np, Ks=[1, 2, 3])
    assert ranked.height == N_QUERIES
    path = tmp_path / "mine.trec"
    write_run(ranked, texts, path, tag="MINE")
    assert run_tag(path) == "MINE"
    again, report = rank_from_run(texts, path, documents=documents, queries=queries,
                                  embedder_code=run_tag(path), Nc=Nc, Np=Np, Ks=[1, 2, 3])
    assert again.equals(ranked)
    assert report.as_dict()["candidates_not_in_run"] == 0


def run_table(lines: list[str], tmp_path: Path) -> pl.DataFrame:
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    return read_run(path)


def test_score_orders_then_the_rank_column_breaks_ties_and_unranked_candidates_come_last(dataset, tmp_path):
    _, texts, _, _ = dataset
    # q0's candidates for Nc=5, Np=2: q0d0, q0d1 (positives), q0d3, q0d4, q0d5 (negatives)
    run = run_table([
        "q0 Q0 q0d5 2 0.5 r",   # tie on score with q0d3: the rank column (2 < 3) puts it first
        "q0 Q0 q0d3 3 0.5 r",
        "q0 Q0 q0d1 1 0.9 r",
        "q0 Q0 extra1 4 0.95 r",  # not a candidate: ignored
        "q1 Q0 q1d0 1 1 r",
    ], tmp_path)
    ranked, report = run_rank_samples(texts, run, embedder_code="r", Nc=5, Np=2, Ks=[1, 2, 5])
    rows = {row["id"]: row for row in ranked.iter_rows(named=True)}
    assert rows["B-0"]["rank"] == [1, 4, 2, 0, 3]  # q0d1, q0d5, q0d3, then q0d0, q0d4 in candidate order
    assert rows["B-0"]["P"] == [1.0, 0.5, 0.4]
    assert rows["B-1"]["rank"] == [0, 1, 2, 3, 4]
    assert set(rows) == {"B-0", "B-1"}
    assert report.skipped["not_in_run"] == N_QUERIES - 2
    assert report.as_dict()["candidates_not_in_run"] == 2 + 4


BAD_RUNS = [
    (["q0 Q0 q0d0 1 0.5"], "line 1", "expected 6 fields"),
    (["q0 Q0 q0d0 1 0.5 r", "", "q0 Q0 q0d1 2 0.4 r extra"], "line 3", "expected 6 fields"),
    (["q0 Q0 q0d0 first 0.5 r"], "line 1", "rank 'first' must be an integer >= 1"),
    (["q0 Q0 q0d0 0 0.5 r"], "line 1", "rank '0' must be an integer >= 1"),
    (["q0 Q0 q0d0 1.5 0.5 r"], "line 1", "rank '1.5' must be an integer >= 1"),
    (["q0 Q0 q0d0 1 high r"], "line 1", "score 'high' must be a finite number"),
    (["q0 Q0 q0d0 1 nan r"], "line 1", "score 'nan' must be a finite number"),
    (["q0 Q0 q0d0 1 inf r"], "line 1", "score 'inf' must be a finite number"),
    (["q0 Q0 q0d0 1 0.5 r", "q0 Q0 q0d1 2 0.4 other"], "line 2", "tag 'other' differs from the first line's 'r'"),
    (["q0 Q0 q0d0 1 0.5 r", "q1 Q0 q1d0 1 0.5 r", "q0 Q0 q0d0 2 0.4 r"], "line 3",
     "document 'q0d0' repeated for query 'q0' (first on line 1)"),
    (["q0 Q0 q0d0 1 0.5 r", "q0 Q0 nowhere 2 0.4 r"], "line 2", "document 'nowhere' is not in the corpus"),
    (["q0 Q0 q0d0 1 0.5 r", "q9 Q0 q0d1 1 0.4 r"], "line 2", "query 'q9' is not in the queries"),
    (["", "  "], "file", "no run lines"),
]


@pytest.mark.parametrize(("lines", "record", "rule"), BAD_RUNS)
def test_a_bad_run_record_is_one_error_naming_file_line_and_rule(dataset, tmp_path, lines, record, rule):
    _, texts, documents, queries = dataset
    path = tmp_path / "bad.trec"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        rank_from_run(texts, path, documents=documents, queries=queries, embedder_code="r", Nc=5, Np=2, Ks=[1])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {record}: ")
    assert rule in message


def test_runs_need_document_ids(dataset, tmp_path):
    _, texts, _, _ = dataset
    run = run_table(["q0 Q0 q0d0 1 0.5 r"], tmp_path)
    with pytest.raises(ValueError, match="ranks documents by id"):
        run_rank_samples(texts.drop("p_doc"), run, embedder_code="r", Nc=5, Np=2, Ks=[1])
    with pytest.raises(ValueError, match="no document ids"):
        corpus_ids("generic", tmp_path / "run.trec")
