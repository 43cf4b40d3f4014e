"""A JSON object that gives a key twice is refused by every reader of JSON input, at any depth, in
JSON lines and JSON arrays: one line naming the file, the record and the key. JSON readers differ
on which value counts (Python's json keeps the last, polars the first), so no value is chosen.

The class: for each JSON file the workflow reads (every JSON layout's shipped or fixture file,
the published files, human grades, BEIR queries and corpus, traces), record 2 gets its first key
again, first with another value; and, where records nest objects (a trace's documents, an extra
field), a nested object gets a key twice. JSON-lines traces are read columnar: a field the
workflow does not read is skipped unparsed, so a key repeated inside it is not looked at.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO
from retrieval_response.datasets.judged_corpus import jsonl_texts
from retrieval_response.datasets.layouts import read_texts
from retrieval_response.datasets.traces import read_trace_file
from retrieval_response.infra.errors import InputError, InputErrors
from retrieval_response.infra.json_records import load_json, quoted_key_counts, read_json_records
from retrieval_response.tables.human_grades import read_human_grades
from retrieval_response.tables.published import read_graded, read_ranked

pytestmark = pytest.mark.unit

FIXTURES = REPO / "tests/fixtures"
TRACES = REPO / "resources/data/traces/hotpotqa_bm25_top5.jsonl"

READERS: dict[str, tuple[Path, Callable[[Path], object]]] = {
    "generic": (FIXTURES / "datasets/generic.jsonl", lambda p: read_texts("generic", p)),
    "published_texts": (FIXTURES / "datasets/published_samples_texts.json", lambda p: read_texts("published_texts", p)),
    "hotpotqa_hf": (FIXTURES / "datasets/hotpotqa_original_layout.json", lambda p: read_texts("hotpotqa_hf", p)),
    "msmarco": (FIXTURES / "datasets/msmarco_rows.jsonl", lambda p: read_texts("msmarco", p)),
    "arxiv_snapshot": (FIXTURES / "datasets/arxiv_snapshot_sample.jsonl", lambda p: read_texts("arxiv_snapshot", p)),
    "natural_questions": (FIXTURES / "datasets/nq_prepared.jsonl", lambda p: read_texts("natural_questions", p)),
    "samples_graded": (FIXTURES / "published/samples_graded.json", read_graded),
    "samples_ranked": (FIXTURES / "published/samples_ranked.json", read_ranked),
    "samples_human": (FIXTURES / "published/samples_human.json", read_human_grades),
    "beir_queries": (REPO / "resources/data/hotpotqa_beir/queries.jsonl", lambda p: jsonl_texts(p, "_id", False)),
    "traces": (TRACES, read_trace_file),
}
"""A valid JSON file of each kind the workflow reads, and its reader."""
LINES_ONLY = {"beir_queries", "arxiv_snapshot"}
"""Kinds read as JSON lines only (a BEIR folder's files, the arXiv snapshot)."""


def records_of(path: Path) -> tuple[list[dict], bool]:
    """The records of a JSON array or JSON-lines file, and whether it is an array."""
    return [r.data for r in read_json_records(path)], path.read_text(encoding="utf-8").lstrip().startswith("[")


def with_first_key_twice(record: dict) -> str:
    """``record`` as JSON text whose first key is given twice: first with another value, then its own."""
    key = next(iter(record))
    return "{" + json.dumps(key) + ": " + json.dumps(["another value"]) + ", " + json.dumps(record)[1:]


def written(path: Path, texts: list[str], array: bool) -> Path:
    path.write_text(("[" + ",\n".join(texts) + "]") if array else "\n".join(texts) + "\n", encoding="utf-8")
    return path


def refused(read: Callable[[Path], object], path: Path) -> InputError:
    """The one InputError ``read(path)`` raises."""
    with pytest.raises(InputError) as caught:
        read(path)
    assert not isinstance(caught.value, InputErrors), str(caught.value)
    return caught.value


@pytest.mark.parametrize(("kind", "array"), [(kind, array) for kind in READERS for array in (False, True)
                                             if not (array and kind in LINES_ONLY)],
                         ids=lambda v: v if isinstance(v, str) else ("array" if v else "lines"))
def test_a_key_given_twice_in_a_record_is_one_line_naming_file_record_and_key(tmp_path, kind, array):
    source, read = READERS[kind]
    records, _ = records_of(source)
    read(source)  # the file itself is valid
    texts = [json.dumps(r, ensure_ascii=False) for r in records]
    texts[1] = with_first_key_twice(records[1])
    path = written(tmp_path / source.name, texts, array)
    error = refused(read, path)
    key = next(iter(records[1]))
    assert error.path == str(path)
    assert error.record == ("record 2" if array else "line 2")
    assert error.rule.startswith(f"key '{key}' is given twice in one object")


NESTED = {
    "a trace's document": lambda r: {**r, "docs": [r["docs"][0], "DUPLICATE", *r["docs"][2:]]},
    "an extra field's object": lambda r: {**r, "meta": {"source": "DUPLICATE"}},
}


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize(("place", "array"), [("a trace's document", False), ("a trace's document", True),
                                              ("an extra field's object", True)],
                         ids=lambda v: v if isinstance(v, str) else ("array" if v else "lines"))
def test_a_key_given_twice_in_a_nested_object_of_a_trace_is_refused(tmp_path, place, array, gzipped):
    records, _ = records_of(TRACES)
    second = json.dumps(NESTED[place](records[1]), ensure_ascii=False)
    second = second.replace('"DUPLICATE"', '{"id": "d-a", "text": "x", "id": "d-b"}')
    texts = [json.dumps(r, ensure_ascii=False) for r in records[:3]]
    texts[1] = second
    path = written(tmp_path / ("traces.json" if array else "traces.jsonl"), texts, array)
    if gzipped:
        with path.open("rb") as plain, gzip.open(path.with_name(path.name + ".gz"), "wb") as packed:
            shutil.copyfileobj(plain, packed)
        path.unlink()
        path = path.with_name(path.name + ".gz")
    error = refused(read_trace_file, path)
    assert (error.path, error.record) == (str(path), "record 2" if array else "line 2")
    assert error.rule.startswith("key 'id' is given twice in one object")


@pytest.mark.parametrize("field", ["feedback", "gold", "time"])
@pytest.mark.parametrize("same_value", [False, True], ids=["another-value", "same-value"])
def test_a_field_given_twice_in_json_lines_traces_is_refused_whichever_reader_reads_it(tmp_path, field, same_value):
    records, _ = records_of(TRACES)
    values = {"feedback": (1, 0.25), "gold": (["one answer"], ["another"]), "time": ("2026-01-01", "2026-02-01")}[field]
    texts = [json.dumps(r, ensure_ascii=False) for r in records[:4]]
    first, last = values[0], values[0] if same_value else values[1]
    third = {k: v for k, v in records[2].items() if k != field}
    texts[2] = json.dumps(third, ensure_ascii=False)[:-1] + f", {json.dumps(field)}: {json.dumps(first)}, " \
        f"{json.dumps(field)}: {json.dumps(last)}}}"
    path = written(tmp_path / "traces.jsonl", texts, array=False)
    error = refused(read_trace_file, path)
    assert (error.path, error.record) == (str(path), "line 3")
    assert error.rule.startswith(f"key '{field}' is given twice in one object")


def test_a_field_name_written_as_a_value_is_no_repeated_key(tmp_path):
    records, _ = records_of(TRACES)
    records[1]["answer"] = "feedback"
    records[2]["docs"][0]["text"] = "gold"
    path = written(tmp_path / "traces.jsonl", [json.dumps(r, ensure_ascii=False) for r in records[:4]], array=False)
    assert read_trace_file(path).height == 4


def test_every_record_with_a_key_twice_is_named_in_an_array(tmp_path):
    records, _ = records_of(FIXTURES / "datasets/generic.jsonl")
    texts = [with_first_key_twice(r) if n in (0, 2) else json.dumps(r) for n, r in enumerate(records)]
    path = written(tmp_path / "generic.json", texts, array=True)
    with pytest.raises(InputErrors) as caught:
        read_texts("generic", path)
    assert [e.record for e in caught.value.errors] == ["record 1", "record 3"]


@pytest.mark.parametrize("text", ['{"a": 1, "a": 1}', '{"a": {"b": [1, {"c": 2, "c": 3}]}}', '[{"x": 0}, {"y": 1, "y": 1}]'])
def test_load_json_refuses_a_repeated_key_even_with_the_same_value(text):
    with pytest.raises(InputError, match="is given twice in one object"):
        load_json("f.json", "line 1", text)


def test_distinct_keys_in_sibling_objects_are_fine():
    assert load_json("f.json", "line 1", '[{"a": 1}, {"a": 2, "b": {"a": 3}}]') == [{"a": 1}, {"a": 2, "b": {"a": 3}}]


def test_key_counts_are_the_same_however_the_text_is_cut_into_chunks():
    text = b'{"id": "a", "gold": ["x"]}\n{"id": "b", "gold": "gold", "id": "c"}\n'
    whole = quoted_key_counts([text], ["id", "gold"])
    assert whole == {"id": 3, "gold": 3}
    for size in range(1, len(text) + 1):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        assert quoted_key_counts(chunks, ["id", "gold"]) == whole, size
