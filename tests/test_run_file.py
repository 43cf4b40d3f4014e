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
from retrieval_response.ranking.cosine_ranking import rank_samples, tie_keys
from retrieval_response.ranking.run_file import rank_from_run, read_run, run_rank_samples, run_tag, write_run

pytestmark = pytest.mark.unit

N_QUERIES, N_POSITIVES, N_NEGATIVES = 6, 3, 6


def beir_folder(root: Path, query_id: str = "q{q}", doc_id: str = "q{q}d{d}") -> Path:
    """A BEIR folder: 6 queries, each with 3 positives (grades 1-2) and 6 negatives of its own, and
    some unjudged documents; two negatives of each query share a text, so cosines tie. Ids follow
    the templates ``query_id`` and ``doc_id``."""
    corpus, qrels = [], ["query-id\tcorpus-id\tscore"]
    for q in range(N_QUERIES):
        for d in range(N_POSITIVES + N_NEGATIVES):
            text = f"query {q} document {d}" if d != N_POSITIVES + 1 else f"query {q} document {N_POSITIVES}b"
            corpus.append({"_id": doc_id.format(q=q, d=d), "title": "", "text": text})
            qrels.append(f"{query_id.format(q=q)}\t{doc_id.format(q=q, d=d)}\t{(2 if d == 0 else 1) if d < N_POSITIVES else 0}")
    corpus += [{"_id": f"extra{i}", "text": f"unjudged {i}"} for i in range(3)]
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    queries = [{"_id": query_id.format(q=q), "text": f"question {q}"} for q in range(N_QUERIES)]
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
    ranked, _ = rank_samples(texts, fake_encode, ranker_code="MINE", Nc=Nc, Np=Np, Ks=[1, 2, 3])
    assert ranked.height == N_QUERIES
    path = tmp_path / "mine.trec"
    write_run(ranked, texts, path, tag="MINE")
    assert run_tag(path) == "MINE"
    again, report = rank_from_run(texts, path, documents=documents, queries=queries,
                                  ranker_code=run_tag(path), Nc=Nc, Np=Np, Ks=[1, 2, 3])
    assert again.equals(ranked)
    assert report.as_dict()["candidates_not_in_run"] == 0


def run_table(lines: list[str], tmp_path: Path) -> pl.DataFrame:
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    return read_run(path)


def candidate_text(texts: pl.DataFrame, sample: str, index: int, Nc: int = 5, Np: int = 2) -> str:
    row = texts.filter(pl.col("id") == sample).row(0, named=True)
    return (row["p"][:Np] + row["n"][:Nc - Np])[index]


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
    ranked, report = run_rank_samples(texts, run, ranker_code="r", Nc=5, Np=2, Ks=[1, 2, 5])
    rows = {row["id"]: row for row in ranked.iter_rows(named=True)}
    # q0d1, q0d5, q0d3, then the candidates the run does not rank, q0d0 and q0d4, by their texts' tie keys
    unranked = sorted([0, 3], key=lambda i: tie_keys([candidate_text(texts, "B-0", i)])[0])
    assert rows["B-0"]["rank"] == [1, 4, 2, *unranked]
    assert rows["B-0"]["P"] == [1.0, 0.5, 0.4]
    assert rows["B-1"]["rank"] == [0, *sorted([1, 2, 3, 4], key=lambda i: tie_keys([candidate_text(texts, "B-1", i)])[0])]
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
        rank_from_run(texts, path, documents=documents, queries=queries, ranker_code="r", Nc=5, Np=2, Ks=[1])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {record}: ")
    assert rule in message


def test_runs_need_document_ids(dataset, tmp_path):
    _, texts, _, _ = dataset
    run = run_table(["q0 Q0 q0d0 1 0.5 r"], tmp_path)
    with pytest.raises(ValueError, match="ranks documents by id"):
        run_rank_samples(texts.drop("p_doc"), run, ranker_code="r", Nc=5, Np=2, Ks=[1])
    with pytest.raises(ValueError, match="no document ids"):
        corpus_ids("generic", tmp_path / "run.trec")


SPACED_IDS = {
    "a space": ("q {q}", "q{q} d{d}"),
    "runs of spaces": ("query  {q}", "doc {q}  /  {d}"),
    "no-break and ideographic spaces": ("q\u00a0{q}", "d\u3000{q}-{d}"),
    "spaces in document ids only": ("q{q}", "document {d} of {q}"),
}


@pytest.mark.parametrize("ids", SPACED_IDS, ids=list(SPACED_IDS))
def test_ids_with_spaces_survive_write_run_then_read_run(tmp_path, ids):
    """write_run writes tab-separated lines; read_run splits a line holding a tab at its tabs, so
    ids with inner white space read back as themselves, in pools and at corpus level."""
    from retrieval_response.datasets.layouts import corpus_table, prepare_judged_queries
    from retrieval_response.ranking.kinds import retrieve_from_corpus

    qrels = beir_folder(tmp_path / "beir", *SPACED_IDS[ids])
    texts = read_texts("beir", qrels)
    documents, queries = corpus_ids("beir", qrels)
    ranked, _ = rank_samples(texts, fake_encode, ranker_code="ML6", Nc=5, Np=2, Ks=[1, 2, 3])
    path = tmp_path / "pools.trec"
    write_run(ranked, texts, path, tag="MINE")
    assert "\t" in path.read_text() and run_tag(path) == "MINE"
    run = read_run(path, documents=documents, queries=queries)
    assert set(run["docid"]) <= set(documents) and set(run["qid"]) <= set(queries)
    again, _ = rank_from_run(texts, path, documents=documents, queries=queries, ranker_code="ML6", Nc=5, Np=2,
                             Ks=[1, 2, 3])
    assert again.equals(ranked)

    judged, _ = prepare_judged_queries("beir", qrels, n_queries=None, seed=0)
    corpus = corpus_table("beir", qrels)
    bm25 = {"kind": "lexical", "spec": {"backend": "bm25"}}
    candidates, retrieved, _ = retrieve_from_corpus(judged, corpus, bm25, ranker_code="BM25", Ks=[1, 2])
    write_run(retrieved, candidates, tmp_path / "corpus.trec", tag="mine")
    again_texts, again, _ = retrieve_from_corpus(judged, corpus, {"kind": "run", "spec": None}, ranker_code="BM25",
                                                 Ks=[1, 2], run_path=str(tmp_path / "corpus.trec"))
    assert again.equals(retrieved) and again_texts.equals(candidates)


UNWRITABLE_IDS = {
    "a tab": ("q0d\t1", "holds a tab"),
    "a line feed": ("q0d\n1", "holds a line break"),
    "a carriage return": ("q0d\r1", "holds a line break"),
    "a line separator": ("q0d\u20281", "holds a line break"),
    "a leading space": (" q0d1", "starts or ends with white space"),
    "a trailing space": ("q0d1 ", "starts or ends with white space"),
    "empty": ("", "is empty"),
}


@pytest.mark.parametrize("case", UNWRITABLE_IDS, ids=list(UNWRITABLE_IDS))
def test_an_id_a_run_cannot_hold_is_refused_at_write_in_one_line(dataset, tmp_path, case):
    _, texts, _, _ = dataset
    bad, rule = UNWRITABLE_IDS[case]
    ranked, _ = rank_samples(texts, fake_encode, ranker_code="ML6", Nc=5, Np=2, Ks=[1])
    texts = texts.with_columns(p_doc=pl.col("p_doc").list.eval(pl.element().replace("q0d1", bad)))
    path = tmp_path / "out.trec"
    with pytest.raises(ValueError) as caught:
        write_run(ranked, texts, path, tag="MINE")
    assert rule in str(caught.value) and repr(bad) in str(caught.value) and "\n" not in str(caught.value)
    assert not path.exists()


@pytest.mark.parametrize("line", ["q0\tQ0\t\t1\t0.5\tr", "\tQ0\tq0d0\t1\t0.5\tr", " \t Q0 \tq0d0\t1\t0.5\tr"])
def test_an_empty_id_in_a_tab_separated_line_is_one_error(dataset, tmp_path, line):
    _, texts, documents, queries = dataset
    path = tmp_path / "bad.trec"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=r"bad\.trec: line 1: empty query or document id"):
        read_run(path, documents=documents, queries=queries)
