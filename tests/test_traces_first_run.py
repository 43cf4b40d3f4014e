"""What a team's first traces run meets (docs/TRACES.md): bad files and records in one line each,
the sample of queries stratified by system (traces.sample), the labelling sheet and its read-back,
the minimum of samples that names its config key, and the feedback figure's intervals."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from snakemake.utils import validate

from conftest import REPO
from retrieval_response.analysis.segments import (
    DEFAULT_MIN_ALL_SAMPLES,
    DEFAULT_MIN_SEGMENT_SAMPLES,
    MIN_SEGMENT_SAMPLES_KEY,
    kept_and_reason,
    segment_minimum,
)
from retrieval_response.datasets.traces import MAX_LISTED, NOT_JSON, checked_records, read_traces, sample_queries
from retrieval_response.decide.verdict import MIN_QUERIES
from retrieval_response.figures.feedback_rate import wilson_interval
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.labelling_sheet import (
    SHEET_COLUMNS,
    labelling_sheet,
    read_labelled_sheet,
    sheet_agreement,
    sheet_pairs,
)
from retrieval_response.workflow_config.checks import check_config
from retrieval_response.workflow_config.input_checks import check_trace_records
from test_traces import _trace, _write

pytestmark = pytest.mark.unit


def _config(tmp_path: Path, datasets: dict, traces: dict | None = None, kinds=("umbrela",)) -> dict:
    config = {"datasets": datasets, "document_judgments": {"kinds": list(kinds)}, "traces": traces or {},
              "llm": {"generator": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "grader": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "prompts": {key: str(REPO / f"resources/prompts/{key}.txt")
                                  for key in ("answer", "grade", "grade_context", "grade_gold", "umbrela")}}}
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    return config


@pytest.mark.parametrize("text", [
    "query_id,query,answer\nq1,Who?,Herbert\n",
    "query_id\tquery\nq1\tWho?\n",
    "\ufeffid;query\n1;x\n",
    "q1 Who wrote Dune? Herbert\n",
])
def test_a_file_that_is_not_json_is_refused_in_one_line(tmp_path, text):
    path = tmp_path / "logs.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        checked_records([path])
    assert str(caught.value).startswith(f"{path}: file: {NOT_JSON}") and "\n" not in str(caught.value)
    assert "malformed JSON" not in str(caught.value)


@pytest.mark.parametrize(("value", "labels", "expected"), [
    ("", {}, None), ("  ", {"up": 1}, None), (None, {}, None), ("", {"": 0.5}, 0.5), ("up", {"up": 1}, 1.0)])
def test_an_empty_feedback_is_no_feedback_unless_mapped(tmp_path, value, labels, expected):
    path = _write(tmp_path / "prod.jsonl", [_trace("q1", ["a"], feedback=value)])
    _, traces, _ = read_traces([path], feedback_labels=labels)
    assert traces["feedback"][0] == expected


@pytest.mark.parametrize("n_bad", [2, MAX_LISTED, MAX_LISTED + 7])
def test_a_rule_broken_by_many_records_is_one_line_naming_them(tmp_path, n_bad):
    records = [_trace(f"q{i}", ["a"], feedback="thumbs_up") for i in range(n_bad)]
    records.insert(1, _trace("qx", []))
    path = _write(tmp_path / "prod.jsonl", records)
    with pytest.raises(InputError) as caught:
        checked_records([path], {"up": 1})
    lines = str(caught.value).splitlines()
    assert len(lines) == 2 and len(set(lines)) == 2, "each message once"
    listed = [n for n in range(1, n_bad + 2) if n != 2][:MAX_LISTED]
    more = f" and {n_bad - MAX_LISTED} more" if n_bad > MAX_LISTED else ""
    assert lines[0].startswith(f"{path}: lines {', '.join(map(str, listed))}{more}: feedback must be a number or a label "
                               "that the dataset's feedback_labels maps to one: label 'thumbs_up'")
    assert lines[1].startswith(f"{path}: line 2: docs is empty")


def test_a_query_id_in_two_traces_datasets_is_refused_at_start_up(tmp_path):
    a = _write(tmp_path / "a.jsonl", [_trace("q1", ["x"])])
    b = _write(tmp_path / "b.jsonl", [_trace("q2", ["y"]), _trace("q1", ["z"])])
    config = _config(tmp_path, {"a": {"layout": "traces", "path": str(a)}, "b": {"layout": "traces", "path": str(b)}})
    check_config(config, "run.yaml", {})
    with pytest.raises(InputError, match=f"^{b}: line 2: query id 'q1' is also a query of the traces dataset a"):
        check_trace_records(config, "run.yaml")


@pytest.mark.parametrize(("traces", "key", "rule"), [
    ({"labelled_sheet": "absent.csv"}, "traces.labelled_sheet", "not found"),
    ({"labelled_sheet": "sheet.csv"}, "traces.labelled_sheet", "add umbrela"),
])
def test_a_traces_section_mistake_names_its_key(tmp_path, traces, key, rule):
    (tmp_path / "sheet.csv").write_text(",".join(SHEET_COLUMNS) + "\n")
    path = _write(tmp_path / "prod.jsonl", [_trace("q1", ["x"])])
    traces = {k: str(tmp_path / v) for k, v in traces.items()}
    config = _config(tmp_path, {"prod": {"layout": "traces", "path": str(path), "relevance": "qrels",
                                         "qrels": str(_write(tmp_path / "q.txt", ["q1 0 x 1"]))}}, traces,
                     kinds=("udcg",) if rule == "add umbrela" else ("umbrela",))
    with pytest.raises(InputError) as caught:
        check_config(config, "run.yaml", {})
    assert str(caught.value).startswith(f"run.yaml: config key {key}: ") and rule in caught.value.rule


def test_traces_keys_apply_to_traces_configs_only(tmp_path):
    config = _config(tmp_path, {"pool": {"layout": "generic", "path": str(_write(tmp_path / "t.jsonl", []))}},
                     {"sample": 10})
    with pytest.raises(InputError, match="config key traces.sample: applies to a config of traces datasets only"):
        check_config(config, "run.yaml", {})


def _systems_traces(layout: str) -> pl.DataFrame:
    """Traces of 300 queries: every system answers every query (shared), each its own queries
    (disjoint: 200 for a, 100 for b), or a answers all and b a tenth (nested)."""
    owners = {"shared": lambda q: ("a", "b", "c"), "disjoint": lambda q: ("a",) if q < 200 else ("b",),
              "nested": lambda q: ("a", "b") if q % 10 == 0 else ("a",)}[layout]
    return pl.DataFrame([(f"q{q:03d}", s) for q in range(300) for s in owners(q)], schema=["query_id", "system"],
                        orient="row")


@pytest.mark.parametrize("layout", ["shared", "disjoint", "nested"])
@pytest.mark.parametrize("n", [1, 30, 299, 300, 5000])
def test_the_sample_of_queries_keeps_each_systems_share(layout, n):
    traces = _systems_traces(layout)
    chosen = sample_queries(traces, n, seed=7)
    assert len(chosen) == min(n, 300) and chosen == sample_queries(traces, n, seed=7)
    per_system = Counter(traces.filter(pl.col("query_id").is_in(list(chosen)))["system"].to_list())
    all_of = Counter(traces["system"].to_list())
    for system, size in all_of.items():
        assert abs(per_system[system] - min(n, 300) * size / 300) <= max(1.0, 0.1 * min(n, 300) * size / 300)
    if n < 300:
        assert sample_queries(traces, n, seed=8) != chosen, "the seed draws the sample"


def test_a_sample_keeps_every_trace_of_its_queries(tmp_path):
    path = _write(tmp_path / "v.jsonl", [_trace(f"q{q}", ["a"], system=s) for q in range(40) for s in ("x", "y")])
    texts, traces, report = read_traces([path], sample=10, seed=3)
    assert texts.height == 10 and traces.height == 20 and report["sample"] == {"queries": 10, "of": 40, "seed": 3}


@pytest.mark.parametrize(("configured", "segmentation", "expected"), [
    (None, "all", DEFAULT_MIN_ALL_SAMPLES), (None, "fit", DEFAULT_MIN_SEGMENT_SAMPLES),
    (None, "ratio", DEFAULT_MIN_SEGMENT_SAMPLES), (40, "all", 40), (40, "fit", 40)])
def test_the_minimum_of_samples_is_the_verdicts_on_all_samples_unless_set(configured, segmentation, expected):
    assert segment_minimum(configured, segmentation) == expected
    assert DEFAULT_MIN_ALL_SAMPLES == MIN_QUERIES, "the default on segment all is the verdict's minimum of queries"


@pytest.mark.parametrize("minimum", [2, 10, 300])
def test_a_segment_left_out_for_its_size_names_the_config_key_and_value(minimum):
    frame = pl.DataFrame({"n": [minimum - 1, minimum], "m": [1, 0]})
    out = frame.select(kept_and_reason(pl.col("n"), minimum, pl.col("m")))
    assert out["kept"].to_list() == [False, True] and out["reason"][1] is None
    assert out["reason"][0].startswith(f"n < {minimum}: ") and f"({MIN_SEGMENT_SAMPLES_KEY} = {minimum})" in out["reason"][0]


def test_the_labelling_sheet_covers_every_label_and_rank_and_reads_back_to_kappa(tmp_path):
    k, n_queries = 4, 30
    path = _write(tmp_path / "s.jsonl", [_trace(f"q{q}", [f"q{q}d{i}" for i in range(k)], system="s")
                                         for q in range(n_queries)])
    texts, traces, _ = read_traces([path], subset="prod")
    rng = np.random.default_rng(0)
    labels = rng.choice(4, size=n_queries * k, p=[0.5, 0.3, 0.17, 0.03])
    judgments = (texts.select("id", text=pl.col("n")).explode("text")
                 .with_columns(umbrela_label=pl.Series(labels, dtype=pl.Int8)))
    pairs = sheet_pairs("prod", texts, traces, judgments)
    assert pairs.height == n_queries * k and set(pairs["rank"]) == set(range(1, k + 1))
    sheet = labelling_sheet(pairs, 24, seed=1)
    assert tuple(sheet.columns) == SHEET_COLUMNS and sheet.height == 24 and (sheet["relevant"] == "").all()
    picked = sheet.join(pairs, on=["dataset", "query_id", "document_id"])
    strata = set(pairs.select("umbrela_label", "rank").iter_rows())
    assert set(picked.select("umbrela_label", "rank").iter_rows()) == strata, "every (label, rank) is on the sheet"
    marks = picked.with_columns(relevant=pl.when(pl.col("umbrela_label") >= 2).then(pl.lit("yes")).otherwise(pl.lit("no")))
    marks = marks.with_columns(relevant=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("")).otherwise("relevant"))
    marked = tmp_path / "marked.csv"
    marked.write_text(marks.select(SHEET_COLUMNS).write_csv())
    read = read_labelled_sheet(marked)
    assert read.height == 23, "a blank cell is a pair not marked"
    table = sheet_agreement(read, [("prod", texts, judgments)], resamples=200, seed=0)
    row = table.filter(pl.col("subset") == "all").row(0, named=True)
    assert (row["reference"], row["n"], row["kappa"], row["fp"] + row["fn"]) == ("labelled sheet", 23, 1.0, 0)
    assert table.filter(pl.col("subset") != "all")["subset"].to_list() == ["prod"]


@pytest.mark.parametrize("cell", ["maybe", "2", "relevant?"])
def test_a_labelling_sheet_cell_that_is_no_mark_is_one_line(tmp_path, cell):
    sheet = tmp_path / "marked.csv"
    sheet.write_text(",".join(SHEET_COLUMNS) + f"\nprod,q1,Who?,d1,text,1\nprod,q1,Who?,d2,text,{cell}\n")
    with pytest.raises(InputError) as caught:
        read_labelled_sheet(sheet)
    assert str(caught.value).startswith(f"{sheet}: line 3: relevant '{cell}': write 1")


def test_a_labelling_sheet_without_its_columns_is_refused(tmp_path):
    sheet = tmp_path / "marked.csv"
    sheet.write_text("query,document,label\nWho?,text,1\n")
    with pytest.raises(InputError, match="has no column dataset, query_id, document_id, relevant"):
        read_labelled_sheet(sheet)


@pytest.mark.parametrize(("successes", "n"), [(0, 10), (5, 10), (10, 10), (37, 100), (1, 2000)])
def test_wilsons_interval_holds_the_share_and_stays_in_0_1(successes, n):
    low, high = wilson_interval(np.array([successes]), np.array([n]))
    assert 0.0 <= low[0] <= successes / n <= high[0] <= 1.0
    width = high[0] - low[0]
    assert width < 2 * 1.96 * np.sqrt(0.25 / n) + 1e-12, "never wider than the widest normal interval"
