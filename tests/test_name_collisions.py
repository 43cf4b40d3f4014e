"""Two user-given names that would silently become one are refused at start-up, one line naming
both: traces files whose names give one system, a traces file listed twice, dataset names and
ranker codes (and a run's code) that differ in letter case only. A traces file's system is its
name without its traces extension only (``bm25.v1.jsonl`` is ``bm25.v1``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from snakemake.utils import validate

from conftest import REPO
from retrieval_response.datasets.traces import file_system, read_traces
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.checks import check_config
from retrieval_response.workflow_config.plan import resolve_run_codes

pytestmark = pytest.mark.unit

SCHEMA = str(REPO / "workflow/schemas/config.schema.yaml")
GENERIC = str(REPO / "tests/fixtures/datasets/generic.jsonl")


def trace(query_id: str, **fields) -> dict:
    return {"query_id": query_id, "query": f"question {query_id}?", "docs": [{"id": "d1", "text": "text of d1"}],
            "answer": f"answer to {query_id}", **fields}


def write(path: Path, records: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


@pytest.mark.parametrize(("name", "system"), [
    ("bm25.v1.jsonl", "bm25.v1"), ("bm25.v1.json", "bm25.v1"), ("bm25.v1.ndjson", "bm25.v1"), ("BM25.JSONL", "BM25"),
    ("bm25", "bm25"), ("logs.v2.txt", "logs.v2.txt"), ("prod.jsonl.gz", "prod"), ("prod.JSON.gz", "prod"),
    ("a.v1.ndjson.gz", "a.v1"), ("prod.parquet", "prod"), ("prod.parquet.gz", "prod.parquet.gz"), ("prod.gz", "prod.gz"),
    ("prod logs.jsonl", None),
    (".jsonl", None),
])
def test_a_files_system_is_its_name_without_its_traces_extension_only(name, system):
    assert file_system(Path("logs") / name) == system


def test_versions_in_file_names_stay_distinct_systems(tmp_path):
    """The example that joined them: both files became system bm25, their name cut at the first dot."""
    files = [write(tmp_path / f"bm25.v{n}.jsonl", [trace("q1"), trace("q2")]) for n in (1, 2)]
    _, traces, report = read_traces(files)
    assert report["systems"] == ["bm25.v1", "bm25.v2"] and traces.height == 4


# (first file, its records' system field, second file, its records' system field); None = no field
JOINING = {
    "same name, two folders": ("a/bm25.jsonl", None, "b/bm25.jsonl", None),
    "same name, two extensions": ("bm25.jsonl", None, "bm25.json", None),
    "JSON lines and ndjson": ("logs/prod.ndjson", None, "prod.jsonl", None),
    "a name and a field": ("bm25.jsonl", None, "other.jsonl", "bm25"),
    "a field and a name": ("other.jsonl", "bm25", "bm25.jsonl", None),
}


@pytest.mark.parametrize("case", JOINING)
@pytest.mark.parametrize("queries", [("q1",), ("q1", "q2")], ids=["disjoint queries", "a shared query"])
def test_two_files_that_one_system_would_join_are_refused_in_one_line_naming_both(tmp_path, case, queries):
    first_name, first_field, second_name, second_field = JOINING[case]
    first = write(tmp_path / first_name, [trace(q, **({"system": first_field} if first_field else {})) for q in queries])
    second = write(tmp_path / second_name, [trace(q, **({"system": second_field} if second_field else {}))
                                             for q in (queries if len(queries) > 1 else ("q9",))])
    with pytest.raises(InputError) as caught:
        read_traces([first, second])
    line = str(caught.value).splitlines()[0]
    assert line.startswith(f"{second}: file: system 'bm25' comes from both {first} (") or \
        line.startswith(f"{second}: file: system 'prod' comes from both {first} (")
    assert "two files would join into one system" in line


def test_files_whose_records_all_name_their_system_may_share_a_name(tmp_path):
    first = write(tmp_path / "2024-01/traces.jsonl", [trace("q1", system="prod"), trace("q2", system="dense")])
    second = write(tmp_path / "2024-02/traces.jsonl", [trace("q3", system="prod")])
    _, traces, report = read_traces([first, second])
    assert report["systems"] == ["dense", "prod"] and traces.height == 3


def traces_config(tmp_path: Path, **entry) -> dict:
    config = {"datasets": {"prod": {"layout": "traces", "path": write(tmp_path / "prod.jsonl", [trace("q1")]), **entry}},
              "document_judgments": {"kinds": ["umbrela"]},
              "llm": {"generator": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "grader": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "prompts": {k: str(REPO / f"resources/prompts/{k}.txt") for k in ("answer", "grade_context", "umbrela")}}}
    validate(config, SCHEMA)
    return config


@pytest.mark.parametrize(("paths", "key", "first"), [
    (["{tmp}/prod.jsonl"], "paths[0]", "path"),
    (["{tmp}/v2.jsonl", "{tmp}/./v2.jsonl"], "paths[1]", "paths[0]"),
    (["{tmp}/logs/../prod.jsonl"], "paths[0]", "path"),
])
def test_a_traces_file_listed_twice_is_refused_naming_both_keys(tmp_path, paths, key, first):
    write(tmp_path / "v2.jsonl", [trace("q1", system="v2")])
    (tmp_path / "logs").mkdir()
    config = traces_config(tmp_path, paths=[p.format(tmp=tmp_path) for p in paths])
    with pytest.raises(InputError) as caught:
        check_config(config, "run.yaml", {})
    assert str(caught.value) == (f"run.yaml: config key datasets.prod.{key}: names the file of datasets.prod.{first} "
                                 "again: its traces would be read twice; list each file once")


def pools_config(datasets: list[str], rankers: list[str]) -> dict:
    config = {"datasets": {name: {"layout": "generic", "path": GENERIC, "subset": f"s{i}"}
                           for i, name in enumerate(datasets)},
              "rankers": {code: {"backend": "bm25"} for code in rankers},
              "llm": {"generator": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "grader": {"model": "openai/x", "api_base": "http://127.0.0.1:0/v1"},
                      "prompts": {k: str(REPO / f"resources/prompts/{k}.txt") for k in ("answer", "grade")}}}
    validate(config, SCHEMA)
    return config


@pytest.mark.parametrize(("datasets", "rankers", "key", "what", "pair"), [
    (["faq", "FAQ"], ["BM25"], "datasets", "dataset name", ("faq", "FAQ")),
    (["faq", "other", "Faq"], ["BM25"], "datasets", "dataset name", ("faq", "Faq")),
    (["faq"], ["bm25", "BM25"], "rankers", "ranker code", ("bm25", "BM25")),
    (["faq"], ["ML6", "Bm25", "ml6"], "rankers", "ranker code", ("ML6", "ml6")),
])
def test_names_that_differ_in_letter_case_only_are_refused_naming_both(datasets, rankers, key, what, pair):
    with pytest.raises(InputError) as caught:
        check_config(pools_config(datasets, rankers), "run.yaml", {})
    assert str(caught.value).startswith(f"run.yaml: config key {key}: {what}s {pair[0]!r} and {pair[1]!r} differ in "
                                        "letter case only")


@pytest.mark.parametrize(("run_code", "rule"), [
    ("BM25", "run code 'BM25' is also a code of the dataset's rankers; set another run_code"),
    ("bm25", "run code 'bm25' differs from the dataset's ranker code 'BM25' in letter case only"),
])
def test_a_run_code_that_is_a_ranker_code_in_any_letter_case_is_refused(run_code, rule):
    config = {"datasets": {"c": {"layout": "beir", "path": "qrels.tsv", "run": "run.txt", "run_code": run_code,
                                 "rankers": ["BM25"]}},
              "rankers": {"BM25": {"backend": "bm25"}}}
    with pytest.raises(InputError) as caught:
        resolve_run_codes(config, "run.yaml")
    assert str(caught.value).startswith(f"run.yaml: config key datasets.c.run_code: {rule}")
