"""Text files of every layout: lines end at a newline only (Unicode line separators inside a text are
text), a byte order mark is no part of the first line; lone surrogates are one InputError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_response.datasets import generic
from retrieval_response.datasets.layouts import corpus_table, read_with_notes
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import parse_json_records, read_json_records
from retrieval_response.ranking.run_file import read_run

pytestmark = pytest.mark.unit

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\u2028\u2029\u0085"]
"""Line breaks for str.splitlines that JSON allows raw inside a string."""


def sample(number: int, q: str) -> dict:
    return {"id": f"s-{number}", "q": q, "p": ["a positive", "another"], "n": ["a negative", "n2", "n3"]}


@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda s: "+".join(f"U{ord(c):04X}" for c in s))
def test_raw_unicode_line_separators_inside_strings_are_text(tmp_path, separator):
    lines = [json.dumps(sample(n, f"before{separator}after {n}"), ensure_ascii=False) for n in range(3)]
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert separator in path.read_text(encoding="utf-8")
    records = read_json_records(path)
    assert [r.label for r in records] == ["line 1", "line 2", "line 3"]
    assert records[1].data["q"] == f"before{separator}after 1"
    texts, _ = generic.read(path, None)
    assert texts["q"].to_list() == [f"before{separator}after {n}" for n in range(3)]


LONE_SURROGATES = ["\\ud800", "\\udfff", "\\uDBFF tail", "x\\udc00", "\\ude00\\ud83d"]


@pytest.mark.parametrize("escape", LONE_SURROGATES)
@pytest.mark.parametrize("field", ["q", "p", "n", "key"])
@pytest.mark.parametrize("layout", ["lines", "array"])
def test_a_lone_surrogate_is_one_line_naming_file_and_record(tmp_path, escape, field, layout):
    good = json.dumps(sample(1, "fine"))
    bad_sample = sample(2, "fine")
    if field == "key":
        bad_sample["MARK"] = 1
    elif field == "q":
        bad_sample["q"] = "MARK"
    else:
        bad_sample[field] = ["ok", "MARK"]
    bad = json.dumps(bad_sample).replace("MARK", escape)
    text = f"{good}\n{bad}\n" if layout == "lines" else f"[{good},\n{bad}]"
    path = tmp_path / "samples.json"
    path.write_text(text, encoding="utf-8")
    label = "line 2" if layout == "lines" else "record 2"
    with pytest.raises(InputError) as caught:
        generic.read(path, None)
    assert caught.value.path == str(path)
    assert caught.value.record == label
    assert "lone surrogate" in caught.value.rule
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("pair", ["\\ud83d\\ude00", "\\uD834\\uDD1E"])
def test_escaped_surrogate_pairs_are_accepted(tmp_path, pair):
    text = json.dumps(sample(1, "MARK")).replace("MARK", pair)
    records = parse_json_records(tmp_path / "x.jsonl", text)
    assert records[0].data["q"] == json.loads(f'"{pair}"')


def judged_layout_files(root: Path, layout: str, doc_text: str, bom: str = "") -> Path:
    """A BEIR folder, or a TREC qrels file with JSON-lines or TSV documents and queries: two queries,
    documents d1 (text ``doc_text``), d2, d3; ``bom`` before the first byte of every file."""
    root.mkdir(parents=True, exist_ok=True)
    docs = {"d1": doc_text, "d2": "a second document", "d3": "a third document"}
    queries = {"q1": "the first query", "q2": "the second query"}

    def write(path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(bom + text, encoding="utf-8")
        return path

    def jsonl(records: dict, key: str) -> str:
        return "".join(json.dumps({key: k, "text": v}, ensure_ascii=False) + "\n" for k, v in records.items())

    if layout == "beir":
        write(root / "corpus.jsonl", jsonl(docs, "_id"))
        write(root / "queries.jsonl", jsonl(queries, "_id"))
        return write(root / "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq2\td3\t2\n")
    for stem, records in (("documents", docs), ("queries", queries)):
        if layout == "trec-tsv":
            write(root / f"{stem}.tsv", "".join(f"{k}\t{v}\n" for k, v in records.items()))
        else:
            write(root / f"{stem}.jsonl", jsonl(records, "id"))
    return write(root / "qrels.txt", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")


JUDGED_LAYOUTS = ["beir", "trec-jsonl", "trec-tsv"]


@pytest.mark.parametrize("layout", JUDGED_LAYOUTS)
@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda s: "+".join(f"U{ord(c):04X}" for c in s))
def test_unicode_line_separators_are_text_in_every_layout(tmp_path, layout, separator):
    qrels = judged_layout_files(tmp_path, layout, f"first{separator}document")
    texts, _ = read_with_notes(layout.split("-")[0], qrels)
    assert texts["p"].to_list()[0] == [f"first{separator}document"]
    corpus = corpus_table(layout.split("-")[0], qrels)
    assert corpus["doc_id"].to_list() == ["d1", "d2", "d3"]


@pytest.mark.parametrize("layout", [*JUDGED_LAYOUTS, "generic"])
def test_a_byte_order_mark_before_the_first_line_is_no_part_of_it(tmp_path, layout):
    if layout == "generic":
        path = tmp_path / "samples.jsonl"
        path.write_text("\ufeff" + json.dumps(sample(1, "a query")) + "\n", encoding="utf-8")
        assert generic.read(path, None)[0]["q"].to_list() == ["a query"]
        return
    plain, _ = read_with_notes(layout.split("-")[0], judged_layout_files(tmp_path / "plain", layout, "text"))
    marked, _ = read_with_notes(layout.split("-")[0], judged_layout_files(tmp_path / "bom", layout, "text", "\ufeff"))
    assert marked.equals(plain)


@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda s: "+".join(f"U{ord(c):04X}" for c in s))
def test_a_run_file_line_ends_at_newline_only(tmp_path, separator):
    path = tmp_path / "run.txt"
    path.write_text(f"\ufeffq1\tQ0\td{separator}1\t1\t2.0\ttag\r\nq1 Q0 d2 2 1.0 tag\n", encoding="utf-8")
    run = read_run(path)
    assert run["docid"].to_list() == [f"d{separator}1", "d2"] and run["line"].to_list() == [1, 2]
