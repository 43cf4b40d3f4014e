"""BEIR folders and TREC qrels read into the texts table; one InputError per bad record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_response.datasets.judged_corpus import beir_qrels, grade
from retrieval_response.datasets.layouts import corpus_table, read_with_notes
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.plan import dataset_source_files

pytestmark = pytest.mark.unit

CORPUS = [
    {"_id": "d1", "title": "Paris", "text": "Paris is the capital of France."},
    {"_id": "d2", "title": "", "text": "Lyon is a city in France."},
    {"_id": 3, "text": "Berlin is the capital of Germany."},
    {"_id": "d4", "title": "Rome", "text": "Rome is in Italy."},
]
QUERIES = [
    {"_id": "q1", "text": "capital of France"},
    {"_id": "q2", "text": "unjudged query"},
    {"_id": "q3", "text": "capital of Germany"},
]
BEIR_QRELS = "query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td1\t2\nq1\td4\t0\nq3\t3\t1\n"


def jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def beir_folder(root: Path, qrels: str = BEIR_QRELS, corpus=CORPUS, queries=QUERIES) -> Path:
    (root / "qrels").mkdir(parents=True)
    jsonl(root / "corpus.jsonl", corpus)
    jsonl(root / "queries.jsonl", queries)
    (root / "qrels" / "test.tsv").write_text(qrels)
    return root / "qrels" / "test.tsv"


def trec_files(root: Path, qrels: str, tsv: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    documents = [(str(record["_id"]), record["text"]) for record in CORPUS]
    queries = [(record["_id"], record["text"]) for record in QUERIES]
    for stem, pairs in (("documents", documents), ("queries", queries)):
        if tsv:
            (root / f"{stem}.tsv").write_text("".join(f"{i}\t{t}\n" for i, t in pairs))
        else:
            jsonl(root / f"{stem}.jsonl", [{"id": i, "text": t} for i, t in pairs])
    (root / "qrels.txt").write_text(qrels)
    return root / "qrels.txt"


def test_beir_keeps_grades_string_ids_and_drops_unjudged_queries(tmp_path):
    texts, notes = read_with_notes("beir", beir_folder(tmp_path))
    assert texts["id"].to_list() == ["B-0", "B-2"]
    assert texts["source_id"].to_list() == ["q1", "q3"]
    first = texts.row(0, named=True)
    assert first["p"] == ["Paris\nParis is the capital of France.", "Lyon is a city in France."]
    assert first["p_grade"] == [2, 1]
    assert first["n"] == ["Rome\nRome is in Italy."]
    assert texts.row(1, named=True)["p"] == ["Berlin is the capital of Germany."]
    assert notes["queries_without_judgements"] == 1


@pytest.mark.parametrize("tsv", [False, True])
def test_trec_gives_the_beir_table_from_jsonl_or_tsv(tmp_path, tsv):
    trec_qrels = "q1 0 d2 1\nq1 0 d1 2\nq1 0 d4 0\nq3 0 3 1\n"
    trec, _ = read_with_notes("trec", trec_files(tmp_path / "trec", trec_qrels, tsv))
    beir, _ = read_with_notes("beir", beir_folder(tmp_path / "beir", corpus=[{**r, "title": ""} for r in CORPUS]))
    assert trec.drop("id", "subset").equals(beir.drop("id", "subset"))
    assert trec["id"].to_list() == ["T-0", "T-2"]


BAD_BEIR_QRELS = [
    ("q1\td1\t1\n", "line 1", "header"),
    ("query-id\tcorpus-id\tscore\nq1\td1\n", "line 2", "3 tab-separated fields"),
    ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "line 2", "must be an integer"),
    ("query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq1\td1\t0\n", "line 4", "duplicate judgement"),
    ("query-id\tcorpus-id\tscore\nq1\td9\t1\n", "line 2", "'d9' is not in the corpus"),
    ("query-id\tcorpus-id\tscore\nq9\td1\t1\n", "line 2", "'q9' is not in the queries"),
    ("query-id\tcorpus-id\tscore\n", "file", "no judgements"),
]


@pytest.mark.parametrize(("qrels", "record", "rule"), BAD_BEIR_QRELS)
def test_bad_beir_qrels_line_is_one_error(tmp_path, qrels, record, rule):
    path = beir_folder(tmp_path, qrels=qrels)
    with pytest.raises(InputError) as error:
        read_with_notes("beir", path)
    assert (error.value.path, error.value.record) == (str(path), record)
    assert rule in error.value.rule and "\n" not in str(error.value)


BAD_CORPORA = [
    ([*CORPUS, {"_id": "d1", "text": "again"}], "line 5", "duplicate id 'd1'"),
    ([{"_id": "d1"}], "line 1", "missing key 'text'"),
    ([{"_id": "d1", "text": "  "}], "line 1", "is empty"),
    ([{"_id": ["d1"], "text": "x"}], "line 1", "must be a string"),
    ([{"_id": "d1", "text": "x", "title": 5}], "line 1", "'title' must be a string"),
]


@pytest.mark.parametrize(("corpus", "record", "rule"), BAD_CORPORA)
def test_bad_beir_corpus_record_is_one_error(tmp_path, corpus, record, rule):
    beir_folder(tmp_path, corpus=corpus)
    with pytest.raises(InputError) as error:
        read_with_notes("beir", tmp_path / "qrels" / "test.tsv")
    assert (error.value.path, error.value.record) == (str(tmp_path / "corpus.jsonl"), record)
    assert rule in error.value.rule


@pytest.mark.parametrize(
    ("qrels", "record", "rule"),
    [("q1 0 d1\n", "line 1", "4 fields"), ("q1 0 d1 x\n", "line 1", "integer"), ("q1 0 d8 1\n", "line 1", "not in the corpus")],
)
def test_bad_trec_qrels_line_is_one_error(tmp_path, qrels, record, rule):
    path = trec_files(tmp_path, qrels, tsv=True)
    with pytest.raises(InputError) as error:
        read_with_notes("trec", path)
    assert (error.value.record, rule in error.value.rule) == (record, True)


@pytest.mark.parametrize("line", ["d1 no tab\n", "\tonly text\n", "d1\t \n"])
def test_bad_trec_tsv_document_is_one_error(tmp_path, line):
    path = trec_files(tmp_path, "q1 0 d1 1\n", tsv=True)
    (tmp_path / "documents.tsv").write_text(line)
    with pytest.raises(InputError) as error:
        read_with_notes("trec", path)
    assert (error.value.path, error.value.record) == (str(tmp_path / "documents.tsv"), "line 1")


@pytest.mark.parametrize("both", [True, False])
def test_trec_needs_exactly_one_documents_file(tmp_path, both):
    path = trec_files(tmp_path, "q1 0 d1 1\n", tsv=True)
    if both:
        (tmp_path / "documents.jsonl").write_text('{"id": "d1", "text": "x"}\n')
    else:
        (tmp_path / "documents.tsv").unlink()
    with pytest.raises(InputError, match="exactly one of documents.jsonl or documents.tsv"):
        read_with_notes("trec", path)


def test_a_beir_folder_reads_as_its_test_qrels_file(tmp_path):
    """BEIR's loader takes the folder and a split (default test): the folder gives the table of
    ``qrels/test.tsv``; another split is another qrels file of the same folder."""
    qrels = beir_folder(tmp_path)
    (tmp_path / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td4\t1\n")
    by_file, _ = read_with_notes("beir", qrels)
    by_folder, _ = read_with_notes("beir", tmp_path)
    assert by_folder.equals(by_file)
    assert beir_qrels(tmp_path) == qrels and beir_qrels(tmp_path, "dev") == tmp_path / "qrels" / "dev.tsv"
    assert read_with_notes("beir", beir_qrels(tmp_path, "dev"))[0]["source_id"].to_list() == ["q2"]


@pytest.mark.parametrize(("make", "split", "rule"), [
    (lambda root: root.mkdir(), None,
     "a BEIR folder holds qrels/test.tsv, corpus.jsonl and queries.jsonl; it has no qrels folder"),
    (lambda root: (root / "qrels").mkdir(parents=True), None,
     "no qrels/test.tsv for split 'test' (its qrels folder holds no .tsv file)"),
    (lambda root: beir_folder(root).rename(root / "qrels" / "train.tsv"), None,
     "no qrels/test.tsv for split 'test' (its qrels splits: train)"),
    (lambda root: beir_folder(root), "dev", "no qrels/dev.tsv for split 'dev' (its qrels splits: test)"),
], ids=["no qrels folder", "empty qrels folder", "another split only", "split not there"])
def test_a_beir_folder_without_the_qrels_names_what_is_missing(tmp_path, make, split, rule):
    root = tmp_path / "scifact"
    make(root)
    with pytest.raises(InputError) as caught:
        beir_qrels(root, split)
    assert str(caught.value) == f"{root}: folder: {rule}"


@pytest.mark.parametrize("layout", ["beir", "trec"])
def test_a_subset_names_the_rows_of_a_judged_layout(tmp_path, layout):
    source = beir_folder(tmp_path) if layout == "beir" else trec_files(tmp_path, "q1 0 d2 1\nq3 0 3 1\n", tsv=False)
    texts, _ = read_with_notes(layout, source, subset="scifact")
    assert texts["id"].to_list() == ["scifact-0", "scifact-2"] and set(texts["subset"]) == {"scifact"}
    default, _ = read_with_notes(layout, source)
    assert texts.drop("id", "subset").equals(default.drop("id", "subset"))


NOT_ASCII_INTEGERS = ["1_0", "\u0663", "\uff12", "\u09e8", "2.0", "+1", "1e3", "0x1", "1,0", "\u00b2", "--1"]
"""Grades Python's int() or float() would read, but trec_eval reads otherwise (or not at all)."""
OUT_OF_BOUND = ["101", "-101", "2000", "1" + "0" * 30, "9" * 5000]


def write_qrels(tmp_path: Path, layout: str, score: str) -> Path:
    if layout == "beir":
        return beir_folder(tmp_path, f"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t{score}\n")
    return trec_files(tmp_path, f"q1 0 d1 1\nq1 0 d2 {score}\n", tsv=False)


@pytest.mark.parametrize("layout", ["beir", "trec"])
@pytest.mark.parametrize("score", NOT_ASCII_INTEGERS + OUT_OF_BOUND, ids=lambda s: repr(s[:12]))
def test_a_grade_that_is_no_bounded_ascii_integer_is_one_error_naming_the_line(tmp_path, layout, score):
    qrels = write_qrels(tmp_path, layout, score)
    with pytest.raises(InputError) as error:
        read_with_notes(layout, qrels)
    assert (error.value.path, error.value.record) == (str(qrels), "line 2" if layout == "trec" else "line 3")
    rule = "outside [-100, 100]" if score in OUT_OF_BOUND else "must be an integer written in ASCII digits"
    assert rule in error.value.rule and "\n" not in str(error.value)


@pytest.mark.parametrize("layout", ["beir", "trec"])
@pytest.mark.parametrize("score, grade", [("100", 100), ("-100", -100), ("007", 7), ("-0", 0)])
def test_bounded_ascii_integers_are_grades(tmp_path, layout, score, grade):
    texts, _ = read_with_notes(layout, write_qrels(tmp_path, layout, score))
    row = texts.row(0, named=True)
    assert (row["p_grade"] if grade > 0 else [1]) == ([grade, 1] if grade > 1 else [1])


@pytest.mark.parametrize("value", [True, 2.0, None, 101, -101, 10**30])
def test_a_qrels_record_grade_of_another_type_or_out_of_bound_is_refused(value):
    with pytest.raises(InputError) as error:
        grade("qrels", "record 4", value)
    assert error.value.record == "record 4"


def read_paths(monkeypatch, read) -> set[str]:
    """The files ``read()`` opens through Path.read_text (every reader of these layouts does)."""
    opened: set[str] = set()
    original = Path.read_text

    def recording(self, *args, **kwargs):
        opened.add(str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", recording)
    read()
    monkeypatch.setattr(Path, "read_text", original)
    return opened


@pytest.mark.parametrize("layout, make", [
    ("beir", lambda root: beir_folder(root)),
    ("beir", lambda root: beir_qrels(beir_folder(root).parent.parent)),
    ("trec", lambda root: trec_files(root, "q1 0 d2 1\nq1 0 d4 0\n", tsv=False)),
    ("trec", lambda root: trec_files(root, "q1 0 d2 1\nq1 0 d4 0\n", tsv=True)),
])
def test_every_file_a_judged_dataset_is_read_from_is_a_rule_input(tmp_path, monkeypatch, layout, make):
    qrels = make(tmp_path / "data")
    config = {"datasets": {"x": {"layout": layout, "path": str(qrels)}}}
    inputs = set(dataset_source_files(config, "x"))
    read = read_paths(monkeypatch, lambda: read_with_notes(layout, qrels))
    corpus = read_paths(monkeypatch, lambda: corpus_table(layout, qrels))
    assert read | corpus == inputs and len(inputs) == 3
