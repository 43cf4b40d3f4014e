"""Traces files of every format (datasets/traces.py): JSON lines, a JSON array, gzip'd JSON lines
and Parquet give the same prepared tables; any other format is one line; a corrupt file is one line;
the start-up check reads a dataset once per content (workflow_config/input_checks.py)."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from snakemake.utils import validate

from conftest import REPO
from retrieval_response.datasets.traces import FORMAT_RULE, read_traces
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config import input_checks

pytestmark = pytest.mark.unit

RECORDS = [
    {"query_id": "q1", "query": "Who wrote Dune?", "docs": [{"id": "d1", "text": "Dune is a novel."},
                                                           {"id": "d2", "text": "Herbert was born in Tacoma."}],
     "answer": "Herbert.", "feedback": "up", "gold": "Frank Herbert", "system": "bm25"},
    {"query_id": "q1", "query": "Who wrote Dune?", "docs": [{"id": "d2", "text": "Herbert was born in Tacoma."},
                                                           {"id": "d3", "text": "Dune, 1965."}],
     "answer": "Frank Herbert.", "feedback": 0.5, "gold": ["Frank Herbert", "Herbert"], "system": "dense"},
    {"query_id": "q2", "query": "When?", "docs": [{"id": "d3", "text": "Dune, 1965."}], "answer": "1965.",
     "system": "bm25", "extra": {"answer": 3}},
]
QRELS = "q1 0 d2 1\nq1 0 d1 0\n"


def _jsonl(path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))


def _jsonl_blank_lines(path: Path) -> None:
    path.write_text("\n\n".join(json.dumps(r) for r in RECORDS) + "\r\n")


def _json_array(path: Path) -> None:
    path.write_text(json.dumps(RECORDS, indent=1))


def _gzip(path: Path) -> None:
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in RECORDS).encode()))


def _parquet(path: Path) -> None:
    frame = pl.DataFrame([{**r, "feedback": {"up": "up"}.get(r.get("feedback"), r.get("feedback")),
                           "gold": ([r["gold"]] if isinstance(r.get("gold"), str) else r.get("gold"))}
                          for r in RECORDS]).drop("extra")
    frame.with_columns(pl.col("feedback").cast(pl.String)).write_parquet(path)


WRITERS = {"traces.jsonl": _jsonl, "blank_lines.jsonl": _jsonl_blank_lines, "array.json": _json_array,
           "traces.jsonl.gz": _gzip, "traces.parquet": _parquet}


def _prepared(path: Path, qrels: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    texts, traces, _ = read_traces([path], feedback_labels={"up": 1}, qrels=qrels)
    return texts, traces.drop("file", "record")


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_format_gives_the_same_prepared_tables(tmp_path, name):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    reference = tmp_path / "reference" / "traces.jsonl"
    reference.parent.mkdir()
    _jsonl(reference)
    path = tmp_path / name
    WRITERS[name](path)
    texts, traces = _prepared(path, qrels)
    expected_texts, expected_traces = _prepared(reference, qrels)
    assert texts.equals(expected_texts) and traces.equals(expected_traces)
    assert traces["feedback"].to_list() == [1.0, 0.5, None] and texts["answers"][0].to_list() == ["Frank Herbert",
                                                                                                   "Herbert"]


def test_records_are_labelled_by_their_line_row_or_record(tmp_path):
    labels = {}
    for name in ("blank_lines.jsonl", "array.json", "traces.parquet"):
        WRITERS[name](tmp_path / name)
        labels[name] = read_traces([tmp_path / name], feedback_labels={"up": 1})[1].sort("record")["record"].to_list()
    assert labels == {"blank_lines.jsonl": ["line 1", "line 3", "line 5"],
                      "array.json": ["record 1", "record 2", "record 3"], "traces.parquet": ["row 1", "row 2", "row 3"]}


@pytest.mark.parametrize("name", ["traces.csv", "traces.tsv", "traces.txt", "traces.xlsx", "traces", "traces.parquet.gz",
                                  "traces.csv.gz"])
def test_a_file_of_another_format_is_one_line(tmp_path, name):
    path = tmp_path / name
    path.write_text("query_id,query,docs,answer\nq1,Who?,d1,Herbert\n")
    with pytest.raises(InputError) as caught:
        read_traces([path])
    assert str(caught.value) == f"{path}: file: {FORMAT_RULE}"


@pytest.mark.parametrize("content", ["query_id,query,docs,answer\nq1,Who?,d1,Herbert\n", "query_id\tquery\n",
                                     "q1 0 d1 1\n"])
def test_another_format_under_a_json_name_is_the_same_one_line(tmp_path, content):
    path = tmp_path / "traces.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_traces([path])
    assert str(caught.value) == f"{path}: file: {FORMAT_RULE}"


@pytest.mark.parametrize("content", [b"not gzip at all", gzip.compress(b'{"query_id": "q1"}\n' * 50, mtime=0)[:-12],
                                     b"\x1f\x8b\x08\x00garbage"], ids=["not-gzip", "cut-short", "bad-deflate"])
def test_a_corrupt_gzip_file_is_one_line(tmp_path, content):
    path = tmp_path / "traces.jsonl.gz"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_traces([path])
    assert "\n" not in str(caught.value) and str(caught.value).startswith(f"{path}: file: cannot be read as gzip: ")


@pytest.mark.parametrize(("frame", "column"), [
    (pl.DataFrame({"query_id": [1], "query": ["q"], "docs": [[{"id": "a", "text": "t"}]], "answer": ["x"]}), "query_id"),
    (pl.DataFrame({"query_id": ["q1"], "query": ["q"], "docs": [["a"]], "answer": ["x"]}), "docs"),
    (pl.DataFrame({"query_id": ["q1"], "query": ["q"], "docs": [[{"id": 1, "text": "t"}]], "answer": ["x"]}), "docs"),
    (pl.DataFrame({"query_id": ["q1"], "query": ["q"], "docs": [[{"id": "a", "text": "t"}]], "answer": ["x"],
                   "feedback": [True]}), "feedback"),
    (pl.DataFrame({"query_id": ["q1"], "query": ["q"], "docs": [[{"id": "a", "text": "t"}]], "answer": ["x"],
                   "time": [1767225600]}), "time"),
])
def test_a_parquet_column_of_another_type_is_one_line(tmp_path, frame, column):
    path = tmp_path / "traces.parquet"
    frame.write_parquet(path)
    with pytest.raises(InputError) as caught:
        read_traces([path])
    assert str(caught.value).startswith(f"{path}: column {column}: must hold ") and "\n" not in str(caught.value)


def test_a_corrupt_parquet_file_is_one_line(tmp_path):
    path = tmp_path / "traces.parquet"
    path.write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(InputError) as caught:
        read_traces([path])
    assert str(caught.value).startswith(f"{path}: file: cannot be read as Parquet: ") and "\n" not in str(caught.value)


def test_the_start_up_check_reads_a_dataset_once_per_content(tmp_path, monkeypatch):
    path = tmp_path / "prod.jsonl"
    _jsonl(path)
    config = {"datasets": {"prod": {"layout": "traces", "path": str(path), "feedback_labels": {"up": 1}}},
              "document_judgments": {"kinds": ["umbrela"]},
              "llm": {"generator": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "grader": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"}}}
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    cache = tmp_path / ".snakemake" / "traces_checked.json"
    reads, hashes = [], []
    checked, content_hash = input_checks.checked_records, input_checks.content_hash
    monkeypatch.setattr(input_checks, "checked_records", lambda *a: reads.append(a) or checked(*a))
    monkeypatch.setattr(input_checks, "content_hash", lambda p: hashes.append(p) or content_hash(p))
    input_checks.check_trace_records(config, "run.yaml", cache)
    input_checks.check_trace_records(config, "run.yaml", cache)
    assert (len(reads), len(hashes)) == (1, 1), "the second start-up neither reads nor hashes the file"
    assert json.loads(cache.read_text())["files"][str(path.resolve())]["blake2b"] == content_hash(path)
    stat = path.stat()  # a new modification time, the same content: hashed again, not read again
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    input_checks.check_trace_records(config, "run.yaml", cache)
    assert (len(reads), len(hashes)) == (1, 2)
    config["datasets"]["prod"]["feedback_labels"] = {"up": 1, "down": 0}  # another key: checked again
    input_checks.check_trace_records(config, "run.yaml", cache)
    assert len(reads) == 2
    path.write_text(json.dumps({**RECORDS[0], "feedback": "meh"}) + "\n")  # another content: checked, refused
    with pytest.raises(InputError, match="label 'meh' is not mapped"):
        input_checks.check_trace_records(config, "run.yaml", cache)
    with pytest.raises(InputError, match="label 'meh' is not mapped"):
        input_checks.check_trace_records(config, "run.yaml", cache)
    assert len(reads) == 4, "a refused dataset is not remembered"


def _cached_config(tmp_path: Path, datasets: dict, **analysis) -> dict:
    config = {"datasets": {name: {"layout": "traces", "path": str(path), "feedback_labels": {"up": 1}}
                           for name, path in datasets.items()},
              "document_judgments": {"kinds": ["umbrela"]}, "analysis": analysis,
              "llm": {"generator": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "grader": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"}}}
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    return config


@pytest.mark.parametrize("target", ["grade_gold", "answer_f1"])
def test_a_dataset_found_good_before_still_has_its_targets_checked(tmp_path, target):
    path = tmp_path / "prod.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "gold"}) + "\n" for r in RECORDS))
    cache = tmp_path / "traces_checked.json"
    input_checks.check_trace_records(_cached_config(tmp_path, {"prod": path}), "run.yaml", cache)
    with pytest.raises(InputError, match=f"^run.yaml: config key analysis.targets: target '{target}' can have no value"):
        input_checks.check_trace_records(_cached_config(tmp_path, {"prod": path}, targets=[target]), "run.yaml", cache)


def test_datasets_found_good_apart_are_read_again_together_for_distinct_query_ids(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _jsonl(a)
    b.write_text(json.dumps({**RECORDS[0], "query_id": "q9"}) + "\n")
    cache = tmp_path / "traces_checked.json"
    for name, path in (("a", a), ("b", b)):
        input_checks.check_trace_records(_cached_config(tmp_path, {name: path}), "run.yaml", cache)
    b.write_text(json.dumps(RECORDS[0]) + "\n")
    input_checks.check_trace_records(_cached_config(tmp_path, {"b": b}), "run.yaml", cache)
    with pytest.raises(InputError, match=f"^{b}: line 1: query id 'q1' is also a query of the traces dataset a"):
        input_checks.check_trace_records(_cached_config(tmp_path, {"a": a, "b": b}), "run.yaml", cache)


def test_a_parquet_file_with_more_document_fields_reads_id_and_text(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(QRELS)
    _jsonl(tmp_path / "traces.jsonl")
    _parquet(tmp_path / "plain.parquet")
    frame = pl.read_parquet(tmp_path / "plain.parquet")
    scored = pl.col("docs").list.eval(pl.struct(score=pl.lit(0.5), text=pl.element().struct.field("text"),
                                                id=pl.element().struct.field("id")))
    frame.with_columns(docs=scored).write_parquet(tmp_path / "traces.parquet")
    assert [t.equals(e) for t, e in zip(_prepared(tmp_path / "traces.parquet", qrels),
                                        _prepared(tmp_path / "traces.jsonl", qrels), strict=True)] == [True, True]


TIMES = [datetime(2026, 3, 1, 14, 5, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC), None]
"""The UTC times of the records the Parquet time columns below hold (the third has none)."""


@pytest.mark.parametrize("column", [
    pl.Series(["2026-03-01T15:05:00+01:00", "2026-03-02", None]),
    pl.Series([datetime(2026, 3, 1, 14, 5), datetime(2026, 3, 2), None], dtype=pl.Datetime("us")),
    pl.Series([datetime(2026, 3, 1, 15, 5), datetime(2026, 3, 2, 1), None],
              dtype=pl.Datetime("ms")).dt.replace_time_zone("Europe/Paris"),
], ids=["string", "naive datetime", "zoned datetime"])
def test_a_parquet_time_column_is_read_as_utc(tmp_path, column):
    path = tmp_path / "traces.parquet"
    _parquet(path)
    pl.read_parquet(path).with_columns(time=column).write_parquet(path)
    traces = read_traces([path], feedback_labels={"up": 1})[1].sort("record")
    assert traces["time"].to_list() == TIMES


def test_a_parquet_date_column_is_its_midnight_utc(tmp_path):
    path = tmp_path / "traces.parquet"
    _parquet(path)
    pl.read_parquet(path).with_columns(time=pl.Series([date(2026, 3, 1), None, date(2026, 3, 2)])).write_parquet(path)
    traces = read_traces([path], feedback_labels={"up": 1})[1].sort("record")
    assert traces["time"].to_list() == [datetime(2026, 3, 1, tzinfo=UTC), None, datetime(2026, 3, 2, tzinfo=UTC)]


@pytest.mark.parametrize(("name", "time"), [
    (name, time) for name in ("array.json", "traces.jsonl.gz", "traces.parquet")
    for time in ("yesterday", "2026-02-30", 20260301) if name != "traces.parquet" or isinstance(time, str)
], ids=str)  # a Parquet column of numbers is refused by its type (test_a_parquet_column_of_another_type)
def test_a_bad_time_is_one_line_in_every_format(tmp_path, name, time):
    reference = tmp_path / "traces.jsonl"
    reference.write_text("".join(json.dumps({**r, "time": time}) + "\n" for r in RECORDS[:2]))
    path = tmp_path / name
    if name == "traces.parquet":
        _parquet(path)
        pl.read_parquet(path).with_columns(time=pl.Series([time, time, None])).write_parquet(path)
    elif name == "array.json":
        path.write_text(json.dumps([{**r, "time": time} for r in RECORDS[:2]]))
    else:
        path.write_bytes(gzip.compress(reference.read_bytes()))
    with pytest.raises(InputError) as caught:
        read_traces([path], feedback_labels={"up": 1})
    label = {"array.json": "records", "traces.jsonl.gz": "lines", "traces.parquet": "rows"}[name]
    assert str(caught.value).startswith(f"{path}: {label} 1, 2: time must be an ISO 8601 date"), str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("times", [("2026-03-01", None), (None, None), (None, "2026-03-01T14:05:00Z")], ids=str)
def test_the_start_up_check_says_whether_a_trace_has_a_time_from_its_cache_too(tmp_path, monkeypatch, times):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path, time, query in ((a, times[0], "q1"), (b, times[1], "q9")):
        path.write_text(json.dumps({**RECORDS[0], "query_id": query, **({} if time is None else {"time": time})}) + "\n")
    config = _cached_config(tmp_path, {"a": a, "b": b})
    cache = tmp_path / "traces_checked.json"
    reads = []
    checked = input_checks.checked_records
    monkeypatch.setattr(input_checks, "checked_records", lambda *a: reads.append(a) or checked(*a))
    timed = any(time is not None for time in times)
    assert input_checks.check_trace_records(config, "run.yaml", cache) is timed
    assert input_checks.check_trace_records(config, "run.yaml", cache) is timed
    assert input_checks.check_trace_records(config, "run.yaml") is timed
    assert len(reads) == 4, "the second start-up read nothing, the one without a cache both datasets"
