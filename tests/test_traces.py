"""The traces layout (datasets/traces.py), its analysis table (tables/collect.py) and the verdict on
traces: bad records one line each, measures needing Np not computable, P and T alike at one K, and
feedback driven by the first relevant document's position putting RR or nDCG ahead of P."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml
from snakemake.utils import validate

from conftest import REPO
from doubles.deterministic_provider import register_deterministic
from retrieval_response.analysis.correlation_tables import analysis_tables
from retrieval_response.datasets.traces import read_traces
from retrieval_response.decide.verdict import verdict_table
from retrieval_response.infra.errors import InputError, InputErrors, JobFailure
from retrieval_response.infra.paths import SAFE_NAME_RULE
from retrieval_response.llm.cache import ResponseCache
from retrieval_response.llm.client import LLMClient
from retrieval_response.llm.config import ModelConfig, PacingConfig
from retrieval_response.llm.document_judgments import judge_documents, judged_pairs
from retrieval_response.llm.pipeline import NO_GOLD_ANSWER, grade_traces
from retrieval_response.llm.prompts import GRADE_CONTEXT_FIELDS, GRADE_GOLD_FIELDS, UMBRELA_FIELDS, load_prompt
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES, NEEDS_NP, NOT_COMPUTABLE
from retrieval_response.tables.trace_samples import collect_traces, traces_report
from retrieval_response.testing.openai_server import OpenAIServer
from retrieval_response.workflow_config.checks import check_config
from retrieval_response.workflow_config.input_checks import check_trace_records
from retrieval_response.workflow_config.plan import trace_grade_prompts

pytestmark = pytest.mark.unit

OPTIONS = {"alpha_grid": "linear:5", "min_segment_samples": 10, "bootstrap_resamples": 100, "seed": 0}


def _trace(query_id: str, docs: list[str], **fields) -> dict:
    return {"query_id": query_id, "query": f"question {query_id}?", "docs": [{"id": d, "text": f"text of {d}"}
                                                                          for d in docs],
            "answer": f"answer to {query_id}", **fields}


def _write(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_the_tables_of_two_systems_share_one_candidate_list_per_query(tmp_path):
    path = _write(tmp_path / "v1.jsonl", [
        _trace("q1", ["a", "b"], feedback="up", gold="Alpha", system="bm25"),
        _trace("q1", ["c", "a", "d"], feedback=0.5, system="dense"),
        _trace("q2", ["e"], gold=["x", "y"]),
    ])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 d 0\nq1 0 z 2\n")
    texts, traces, report = read_traces([path], feedback_labels={"up": 1, "down": 0}, qrels=qrels)
    assert texts["id"].to_list() == ["q1", "q2"] == texts["source_id"].to_list(), "the team's query ids are kept"
    assert set(texts["subset"]) == {"traces"} and set(traces["subset"]) == {"traces"}
    q1 = texts.row(0, named=True)
    assert (q1["p_doc"], q1["n_doc"], q1["n_judged"], q1["Np_qrels"]) == (["a"], ["b", "c", "d"], [False, False, True], 2)
    assert q1["answers"] == ["Alpha"] and texts["Np_qrels"][1] is None
    by_system = {row["E"]: row for row in traces.iter_rows(named=True)}
    assert by_system["bm25"]["rank"] == [0, 1] and by_system["dense"]["rank"] == [2, 0, 3]
    assert by_system["dense"]["K"] == [3] and by_system["bm25"]["feedback"] == 1.0
    assert by_system["v1"]["feedback"] is None, "without a system field the file's name is the system"
    assert report["systems"] == ["bm25", "dense", "v1"] and report["traces"] == 3


GOOD = _trace("q0", ["a"])
# records that break a JSON type rule: the columnar reader refuses the file, read again record by record
TYPE_BAD = [
    (_trace(7, ["a"]), "query_id must be a string, found integer"),
    (_trace("q2", ["a"]) | {"answer": ["x"]}, "answer must be a string, found array"),
    (_trace("q4", ["a"]) | {"docs": "a"}, "docs must be an array of documents, found string"),
    (_trace("q6", ["a"]) | {"docs": [{"id": "a", "text": 3}]}, "docs[1].text must be a string, found integer"),
    (_trace("q6", ["a"]) | {"docs": [{"id": "a", "text": "t"}, 5]}, "docs[2] must be an object with id and text"),
    ('{"query_id": "q7", "query": "q?", "docs": [{"id": "a", "text": "text of a"}], "answer": "x", '
     '"feedback": NaN}', "feedback nan is not a finite number"),
    (_trace("q9", ["a"], feedback=True), "feedback must be a number or a label, not a boolean"),
    (_trace("q10", ["a"], gold=[1]), "gold must be a string or an array of strings"),
    ("[1, 2]", "expected a JSON object, found array"),
    ('{"query_id": "q11", ', "malformed JSON line"),
    (json.dumps(_trace("q12", ["a"])).replace("answer to", "\\ud800 answer to"), "a lone surrogate"),
]
# records that break a rule on values: polars expressions over the whole dataset
VALUE_BAD = [
    ({"query": "q?", "docs": [{"id": "a", "text": "text of a"}], "answer": "x"}, "missing field query_id"),
    (_trace("q1", ["a"]) | {"query": "  "}, "query must be a non-blank string"),
    (_trace("q3", []), "docs is empty"),
    (_trace("q5", ["a", "b", "a"]), "docs[3].id 'a' is repeated within the trace"),
    (_trace("q6", ["a"]) | {"docs": [{"id": "a", "text": "text of a"}, {"id": "b"}]}, "docs[2] has no text"),
    (_trace("q8", ["a"], feedback="meh"), "label 'meh' is not mapped (mapped now: up)"),
    (_trace("q11", ["a"], system="../x"), "system '../x': use 1 to 100 ASCII letters"),
    (_trace("q0", ["a"]), "a second trace of query 'q0' by system 'traces' (the first is at {path} line 1)"),
    (_trace("q0", ["a"], system="s2") | {"query": "another?"},
     "query 'q0' has two texts, 'another?' here and 'question q0?' at {path} line 1"),
    (_trace("q12", ["a"]) | {"docs": [{"id": "a", "text": "other"}]},
     "document 'a' has another text at {path} line 1"),
]


@pytest.mark.parametrize(("record", "rule"), TYPE_BAD + VALUE_BAD)
def test_a_bad_record_is_one_line_naming_its_file_line_and_rule(tmp_path, record, rule):
    path = _write(tmp_path / "traces.jsonl", [GOOD, record])
    with pytest.raises(InputError) as caught:
        read_traces([path], feedback_labels={"up": 1})
    [line] = str(caught.value).splitlines()
    assert line.startswith(f"{path}: line 2: ") and rule.format(path=path) in line, line


@pytest.mark.parametrize("bad", [TYPE_BAD, VALUE_BAD], ids=["type", "value"])
def test_every_bad_record_is_reported_once_in_one_pass_and_nothing_is_read(tmp_path, bad):
    path = _write(tmp_path / "traces.jsonl", [GOOD, *(record for record, _ in bad)])
    with pytest.raises(InputErrors) as caught:
        read_traces([path], feedback_labels={"up": 1})
    lines = str(caught.value).splitlines()
    assert len(lines) == len(bad)
    for number, (line, (_, rule)) in enumerate(zip(lines, bad, strict=True), start=2):
        assert line.startswith(f"{path}: line {number}: ") and rule.format(path=path) in line, line


# each record breaks its rule its own way (one rule broken the same way by many records is one line)
@pytest.mark.parametrize("bad", [
    lambda n: _trace(f"t{n}", [f"d{i}" for i in range(n)]) | {"docs": [{"id": f"d{i}", "text": "t"} for i in range(n)] + [5]},
    lambda n: _trace(f"b{n}", ["a"], feedback=f"label{n}"),
], ids=["type", "value"])
def test_many_bad_records_are_capped_with_a_count_of_the_rest(tmp_path, bad):
    path = _write(tmp_path / "traces.jsonl", [GOOD, *(bad(n) for n in range(InputErrors.MAX_LINES + 5))])
    with pytest.raises(InputErrors) as caught:
        read_traces([path])
    lines = str(caught.value).splitlines()
    assert len(lines) == InputErrors.MAX_LINES + 1 and lines[-1] == f"{path}: ... and 5 more broken records"
    assert [line.split(": ")[1] for line in lines[:-1]] == [f"line {n}" for n in range(2, InputErrors.MAX_LINES + 2)]


def _constructed(n_queries: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Traces of one system at K = 5 whose feedback is 6 - (position of the first relevant
    document, 6 without one); the number of relevant documents after it is drawn at random."""
    rng = np.random.default_rng(seed)
    records, labels = [], []
    for q in range(n_queries):
        first = int(rng.integers(1, 7))
        relevant = set()
        if first <= 5:
            later = [p for p in range(first + 1, 6)]
            relevant = {first, *rng.choice(later, size=int(rng.integers(0, len(later) + 1)), replace=False).tolist()}
        docs = [f"q{q}d{p}" for p in range(1, 6)]
        records.append(_trace(f"q{q}", docs, feedback=6 - first, system="prod"))
        labels += [(f"q{q}", f"text of q{q}d{p}", 3 if p in relevant else 0) for p in range(1, 6)]
    return records, labels


def _analysis(tmp_path: Path, records: list, labels: list) -> pl.DataFrame:
    texts, traces, _ = read_traces([_write(tmp_path / "prod.jsonl", records)])
    ids = dict(zip(texts["source_id"], texts["id"], strict=True))
    judgments = pl.DataFrame({
        "id": [ids[q] for q, _, _ in labels], "text": [t for _, t, _ in labels],
        "erag_answer": None, "erag_status": None, "no_response_p": None, "udcg_raw": None, "udcg_status": None,
        "umbrela_label": [label for _, _, label in labels], "umbrela_raw": None, "umbrela_status": "ok",
    }).cast({"umbrela_label": pl.Int8, "no_response_p": pl.Float64, "erag_answer": pl.String,
             "erag_status": pl.String, "udcg_raw": pl.String, "udcg_status": pl.String, "umbrela_raw": pl.String})
    table, report = collect_traces(traces, texts, traces.select("id", "E"), judgments)
    assert report["left_out"] == {"unlabelled": 0} and table.height == len(records)
    return table


def test_feedback_driven_by_the_first_relevant_position_puts_rr_or_ndcg_ahead_of_p(tmp_path):
    table = _analysis(tmp_path, *_constructed(60, seed=1))
    assert table["Np"].is_null().all() and (table["K"] == 5).all()
    verdict = verdict_table(table, targets=["feedback"], **OPTIONS)
    assert set(verdict["segment"]) == {"all"}, "without Np there is no narrow or wide segment"
    decisions = dict(zip(verdict["measure"], verdict["decision"], strict=True))
    best = verdict.filter(pl.col("recommended"))["measure"].to_list()
    assert best and best[0] in ("RR@K", "nDCG"), decisions
    assert decisions["P"] == "worse", decisions


def test_measures_needing_np_are_not_computable_and_t_orders_as_p(tmp_path):
    table = _analysis(tmp_path, *_constructed(30, seed=2))
    verdict = verdict_table(table, targets=["feedback"], **OPTIONS)
    rows = {row["measure"]: row for row in verdict.iter_rows(named=True)}
    for name in ("F", "R", "nDCG@K", "AP@K"):
        assert MEASURES[name].needs_Np and name in NEEDS_NP
        assert (rows[name]["decision"], rows[name]["reason"], rows[name]["n_samples"]) == ("undecided", NOT_COMPUTABLE, 0)
    assert not {"P", "T", "nDCG", "RR@K"} & set(NEEDS_NP)
    assert rows["T"]["decision"] == "undecided" and rows["T"]["same_as"] == "P"
    assert "at the one K = 5 of this segment (and no Np)" in rows["T"]["reason"]
    assert "by construction, not a finding" in rows["T"]["reason"]
    assert rows["RR@K"]["value"] is not None and rows["nDCG"]["value"] is not None


def _traces_config(tmp_path: Path, *, kinds: tuple[str, ...] = ("umbrela",), **datasets) -> dict:
    """A schema-filled traces config whose datasets are ``datasets`` (name: entry), two remote models."""
    config = {
        "datasets": datasets, "document_judgments": {"kinds": list(kinds)},
        "llm": {"generator": {"model": "openai/loopback", "api_base": "http://127.0.0.1:0/v1"},
                "grader": {"model": "openai/loopback", "api_base": "http://127.0.0.1:0/v1"},
                "prompts": {key: str(REPO / f"resources/prompts/{key}.txt")
                            for key in ("answer", "grade", "grade_context", "grade_gold", "umbrela")}},
    }
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    return config


def test_a_newcomers_traces_file_is_refused_at_start_up_with_one_line_per_mistake(tmp_path):
    dune = {"id": "d1", "text": "Dune is a 1965 novel by Frank Herbert."}
    path = _write(tmp_path / "prod.jsonl", [
        {"query_id": "q1", "query": "Who wrote Dune?", "docs": [dune], "answer": "Herbert.", "feedback": "thumbs_up"},
        {"query_id": "q2", "query": "Where was Herbert born?", "docs": [{"id": "d2"}], "answer": "Tacoma."},
        {"query_id": "q1", "query": "who wrote dune", "docs": [dune], "answer": "Herbert.", "system": "dense"},
        {"query_id": "q3", "query": "When?", "docs": [dune], "answer": "1965.", "system": "team/bm25-v2"},
        {"query_id": "q4", "query": "Who?", "docs": [dune], "answer": "Herbert.", "feedback": "up"},
    ])
    config = _traces_config(tmp_path, prod={"layout": "traces", "path": str(path),
                                            "feedback_labels": {"up": 1, "down": 0}})
    check_config(config, "run.yaml", {})
    with pytest.raises(InputErrors) as caught:
        check_trace_records(config, "run.yaml")
    assert str(caught.value).splitlines() == [
        f"{path}: line 1: feedback must be a number or a label that the dataset's feedback_labels maps to one: "
        "label 'thumbs_up' is not mapped (mapped now: down, up)",
        f'{path}: line 2: each document is {{"id", "text"}}: docs[1] has no text',
        f"{path}: line 3: give one text per query_id: query 'q1' has two texts, 'who wrote dune' here and "
        f"'Who wrote Dune?' at {path} line 1",
        f"{path}: line 4: system cannot be used in a file name: system 'team/bm25-v2': {SAFE_NAME_RULE}",
    ], "a bad record's query text still counts: the clash shows in the same pass"
    unnamed = _write(tmp_path / "prod logs.jsonl", [_trace("q1", ["a"]), _trace("q2", ["a"]) | {"system": None}])
    with pytest.raises(InputError) as caught:
        read_traces([unnamed])
    assert str(caught.value).splitlines() == [
        f"{unnamed}: lines 1, 2: no system, and the file's name cannot be one: add a system field or rename the "
        f"file: {SAFE_NAME_RULE}"], "a rule broken by several records is one line naming them"
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1\n")
    _write(path, [{"query_id": "q1", "query": "Who?", "docs": [dune], "answer": "Herbert."}])
    config["datasets"]["prod"]["qrels"] = str(qrels)
    with pytest.raises(InputError, match=f"^{qrels}: line 1: "):
        check_trace_records(config, "run.yaml")


@pytest.mark.parametrize(("datasets", "kinds", "key", "rule"), [
    ({"prod": {"path": "absent.jsonl"}}, ("umbrela",), "datasets.prod.path", "file '{tmp}/absent.jsonl' not found"),
    ({"prod": {"paths": ["v2.jsonl"]}}, ("umbrela",), "datasets.prod.paths", "file '{tmp}/v2.jsonl' not found"),
    ({"prod": {}, "pool": {"layout": "generic"}}, ("umbrela",), "datasets.prod",
     "traces are analysed without Np and cannot share a config with 'pool': run them in a config of their own"),
    ({"prod": {"relevance": "qrels"}}, ("umbrela",), "datasets.prod.relevance", "relevance qrels needs a qrels file"),
    ({"prod": {}}, ("udcg",), "datasets.prod.relevance", "add umbrela to document_judgments.kinds"),
    ({"prod": {"K": [3]}}, ("umbrela",), "datasets.prod.K", "does not apply to traces"),
])
def test_a_traces_config_mistake_is_one_line_at_start_up(tmp_path, datasets, kinds, key, rule):
    _write(tmp_path / "prod.jsonl", [_trace("q1", ["a"])])
    entries = {name: {"layout": "traces", "path": str(tmp_path / "prod.jsonl")} | {
        option: ([str(tmp_path / p) for p in value] if option == "paths" else
                 str(tmp_path / value) if option == "path" else value) for option, value in entry.items()}
        for name, entry in datasets.items()}
    config = _traces_config(tmp_path, kinds=kinds, **entries)
    with pytest.raises(InputError) as caught:
        check_config(config, "run.yaml", {})
    assert str(caught.value) == f"run.yaml: config key {key}: {caught.value.rule}" and "\n" not in str(caught.value)
    assert rule.format(tmp=tmp_path) in caught.value.rule


def _judgments(texts: pl.DataFrame, labels: dict[tuple[str, str], int]) -> pl.DataFrame:
    """A judgments table with the UMBRELA label of each (query id, document id) of ``labels``."""
    rows = []
    for row in texts.iter_rows(named=True):
        for doc, text in zip(row["p_doc"] + row["n_doc"], row["p"] + row["n"], strict=True):
            rows.append({"id": row["id"], "text": text, "umbrela_label": labels[row["source_id"], doc]})
    return pl.DataFrame(rows).with_columns(
        umbrela_status=pl.lit("ok"), **{c: pl.lit(None, pl.String) for c in (
            "erag_answer", "erag_status", "udcg_raw", "udcg_status", "umbrela_raw")},
        no_response_p=pl.lit(None, pl.Float64)).cast({"umbrela_label": pl.Int8})


def test_relevance_qrels_takes_inK_and_np_from_the_qrels_and_reports_umbrela_against_them(tmp_path):
    path = _write(tmp_path / "prod.jsonl", [
        _trace("q1", ["a", "b", "c"], system="bm25"), _trace("q1", ["c", "a"], system="dense"),
        _trace("q2", ["d", "e"], system="bm25"), _trace("q3", ["f"], system="bm25"),
    ])
    qrels = _write(tmp_path / "qrels.txt", ["q1 0 a 1", "q1 0 b 0", "q1 0 z 2", "q2 0 e 1", "q2 0 d 0"])
    # UMBRELA disagrees with the qrels on a (not relevant to it) and b (relevant to it); c is unjudged
    labels = {("q1", "a"): 0, ("q1", "b"): 3, ("q1", "c"): 3, ("q2", "d"): 0, ("q2", "e"): 2, ("q3", "f"): 3}
    texts, traces, _ = read_traces([path], qrels=qrels)
    judgments = _judgments(texts, labels)
    table, report = collect_traces(traces, texts, traces.select("id", "E"), judgments, relevance="qrels",
                                   resamples=20)
    rows = {(r["record"].split()[-1], r["E"]): r for r in table.iter_rows(named=True)}
    assert report["left_out"] == {"not_in_qrels": 1} and table.height == 3, "q3 is not in the qrels"
    assert rows["1", "bm25"]["inK"] == [1, 0, 0] and rows["2", "dense"]["inK"] == [0, 1]
    assert rows["1", "bm25"]["Np"] == 2, "Np counts the query's relevant documents the trace missed (z)"
    assert rows["1", "bm25"]["judged"] == pytest.approx(2 / 3) and rows["3", "bm25"]["judged"] == 1.0
    assert rows["3", "bm25"]["inK"] == [0, 1] and rows["3", "bm25"]["Np"] == 1
    agreement = {row["subset"]: row for row in report["umbrela_vs_qrels"]}["all"]
    # judged pairs only (c is not): a fn, b fp, d tn, e tp
    assert (agreement["n"], agreement["tp"], agreement["fp"], agreement["fn"], agreement["tn"]) == (4, 1, 1, 1, 1)
    assert traces_report(table, {"prod": report})["not_computable"] == {}, "with Np, R and F are computable"

    table, report = collect_traces(traces, texts, traces.select("id", "E"), judgments, resamples=20)
    rows = {(r["record"].split()[-1], r["E"]): r for r in table.iter_rows(named=True)}
    assert rows["1", "bm25"]["inK"] == [0, 1, 1] and rows["1", "bm25"]["Np"] is None, "umbrela: the labels"
    assert report["left_out"] == {"unlabelled": 0} and table.height == 4
    assert {row["subset"]: row for row in report["umbrela_vs_qrels"]}["all"]["n"] == 4, "reported with umbrela too"
    assert set(traces_report(table, {"prod": report})["not_computable"]) == set(NEEDS_NP)


def _gold_grader(messages: list[dict]) -> str:
    """5 when the answer holds the first gold answer, else 2 (the grade_gold prompt's layout)."""
    text = messages[-1]["content"]
    gold = text.split("Correct answers:\n- ", 1)[1].split("\n", 1)[0]
    return "5" if gold in text.split("Answer to grade:", 1)[1] else "2"


def test_trace_grades_gold_grades_each_answer_against_the_gold_answers_only(tmp_path):
    path = _write(tmp_path / "prod.jsonl", [
        _trace("q1", ["a"], system="good", gold=["Frank Herbert"]) | {"answer": "Frank Herbert wrote it."},
        _trace("q1", ["b"], system="poor", gold=["Frank Herbert"]) | {"answer": "Tacoma."},
        _trace("q2", ["c"], system="good"),
    ])
    config = _traces_config(tmp_path, prod={"layout": "traces", "path": str(path), "trace_grades": ["gold"]})
    assert trace_grade_prompts(config, "prod") == {"gold": config["llm"]["prompts"]["grade_gold"]}
    config["llm"]["prompts"]["grade_context"] = str(tmp_path / "absent.txt")
    check_config(config, "run.yaml", {})  # the context prompt is not asked for
    config["llm"]["prompts"]["grade_gold"] = str(tmp_path / "absent.txt")
    with pytest.raises(InputError, match="config key llm.prompts.grade_gold: prompt file .* not found"):
        check_config(config, "run.yaml", {})

    provider = register_deterministic(_gold_grader)
    grader = LLMClient(ModelConfig("det/grader", max_tokens=4, logprobs=True), PacingConfig(),
                       ResponseCache(tmp_path / "cache"))
    texts, traces, _ = read_traces([path])
    prompt = load_prompt(REPO / "resources/prompts/grade_gold.txt", GRADE_GOLD_FIELDS, needs_reask=True)
    grades = grade_traces(traces, texts, grader, gold_prompt=prompt)
    assert "grade_context" not in grades.columns and sum(provider.calls.values()) == 2, "no call without gold"
    by_trace = {(r["id"], r["E"]): r for r in grades.iter_rows(named=True)}
    assert by_trace["q1", "good"]["grade_gold"] == 5 and by_trace["q1", "poor"]["grade_gold"] == 2
    assert (by_trace["q2", "good"]["grade_gold"], by_trace["q2", "good"]["status_gold"]) == (None, NO_GOLD_ANSWER)
    labels = {(q, d): 3 for q, d in (("q1", "a"), ("q1", "b"), ("q2", "c"))}
    table, _ = collect_traces(traces, texts, grades, _judgments(texts, labels))
    assert table.sort("id", "E")["grade_gold"].to_list() == [5, 2, None]
    assert table["grade_gold_expected"].is_not_null().sum() == 2


FEEDBACK_SPELLINGS = [("1e300", 1e300), ("-1e300", -1e300), ("1e-300", 1e-300), ("1" + "0" * 400, None),
                      ("-1" + "0" * 400, None), ("Infinity", None), ("-Infinity", None), ("NaN", None),
                      ("1e999", None), ('"1e999"', None), ("1" + "0" * 5000, None)]
"""Feedback values as a traces file spells them (JSON numbers, Python's JSON extensions, a string), and
the value read (None: refused)."""


@pytest.mark.parametrize(("spelling", "value"), FEEDBACK_SPELLINGS, ids=lambda s: str(s)[:12])
def test_a_feedback_value_is_read_exactly_when_finite_else_refused_in_one_line(tmp_path, spelling, value):
    line = json.dumps(_trace("q1", ["a"])).removesuffix("}") + f', "feedback": {spelling}}}'
    path = _write(tmp_path / "prod.jsonl", [line])
    if value is not None:
        _, traces, _ = read_traces([path])
        assert traces["feedback"].to_list() == [value]
        return
    with pytest.raises(InputError) as caught:
        read_traces([path], feedback_labels={"up": 1})
    message = str(caught.value)
    assert message.startswith(f"{path}: line 1: ") and "\n" not in message and len(message) < 400, message


@pytest.mark.parametrize("scale", [1e300, -1e300, 1e-300, 1e-320, 2.0**-1000, 3e307])
def test_pearson_with_feedback_of_any_finite_magnitude_is_the_one_of_the_rescaled_feedback(tmp_path, scale):
    """Pearson (and every other correlation, with its interval) of feedback scaled by ``scale`` equal
    those of the feedback scaled by its sign alone, and Pearson equals numpy's on the rescaled values."""
    records, labels = _constructed(40, seed=3)
    table = _analysis(tmp_path, records, labels)
    scaled = table.with_columns(pl.col("feedback") * scale)
    options = {"segmentation": "fit", "alpha_grid": "linear:5", "min_segment_samples": 10, "bootstrap_resamples": 50,
               "measures": ["P", "RR@K"], "targets": ["feedback"]}
    base, _, _ = analysis_tables(table.with_columns(pl.col("feedback") * np.sign(scale)), **options)
    extreme, _, _ = analysis_tables(scaled, **options)
    numbers = [c for c in base.columns if base[c].dtype == pl.Float64]
    assert base.select(numbers).to_numpy() == pytest.approx(extreme.select(numbers).to_numpy(), rel=1e-9, nan_ok=True)
    pearson = extreme.filter(pl.col("corr_type") == "pearson", pl.col("measure") == "P")
    features = add_features(scaled)
    precision = features["n_p"].to_numpy() / features["K"].to_numpy()
    expected = np.corrcoef(precision, scaled["feedback"].to_numpy() / abs(scale))[0, 1]
    assert pearson["value"].item() == pytest.approx(expected, abs=1e-12) and abs(expected) > 0.01


@pytest.mark.parametrize(("target", "fields", "options", "refused"), [
    ("feedback", {}, {}, "no trace has a feedback"),
    ("feedback", {"feedback": 1}, {}, None),
    ("grade", {"feedback": 1}, {}, "traces have none of (use grade_context)"),
    ("grade_expected", {}, {"logprobs": True}, "traces have none of"),
    ("grade_context", {}, {"trace_grades": ["gold"], "gold": "x"}, "it needs trace_grades: [retrieved]"),
    ("grade_context", {}, {}, None),
    ("grade_context_expected", {}, {}, "llm.grader.logprobs: true"),
    ("grade_context_expected", {}, {"logprobs": True}, None),
    ("grade_gold", {"gold": "x"}, {}, "trace_grades: [gold]"),
    ("grade_gold", {}, {"trace_grades": ["gold"]}, "gold answers in the traces"),
    ("grade_gold", {"gold": "x"}, {"trace_grades": ["gold"]}, None),
    ("grade_gold_expected", {"gold": "x"}, {"trace_grades": ["gold"]}, "logprobs"),
    ("answer_f1", {}, {}, "gold answers"),
    ("answer_recall", {"gold": []}, {}, "gold answers"),
    ("answer_contains", {"gold": "x"}, {}, None),
])
def test_a_target_that_can_have_no_value_on_the_traces_is_refused_at_start_up(tmp_path, target, fields, options, refused):
    """Before any call is paid for: each target of analysis.targets against what the traces hold."""
    path = _write(tmp_path / "prod.jsonl", [_trace("q1", ["a"]), _trace("q2", ["b"], **fields)])
    entry = {"layout": "traces", "path": str(path)} | ({"trace_grades": options["trace_grades"]}
                                                        if "trace_grades" in options else {})
    config = _traces_config(tmp_path, prod=entry)
    config["analysis"]["targets"] = [target]
    config["llm"]["grader"]["logprobs"] = options.get("logprobs", False)
    check_config(config, "run.yaml", {})
    if refused is None:
        check_trace_records(config, "run.yaml")
        return
    with pytest.raises(InputError) as caught:
        check_trace_records(config, "run.yaml")
    assert str(caught.value).startswith(f"run.yaml: config key analysis.targets: target {target!r} can have no value")
    assert refused in caught.value.rule and "\n" not in str(caught.value)


@pytest.mark.parametrize("relevance", ["qrels", "umbrela"])
def test_qrels_that_judge_no_query_of_the_traces_are_refused_at_start_up(tmp_path, relevance):
    path = _write(tmp_path / "prod.jsonl", [_trace("q1", ["a"], feedback=1), _trace("q2", ["b"], feedback=0)])
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("Q1 0 a 1\nq3 0 b 1\n")
    config = _traces_config(tmp_path, prod={"layout": "traces", "path": str(path), "qrels": str(qrels),
                                            "relevance": relevance})
    check_config(config, "run.yaml", {})
    with pytest.raises(InputError) as caught:
        check_trace_records(config, "run.yaml")
    assert str(caught.value).startswith("run.yaml: config key datasets.prod.qrels: qrels file ")
    assert "judges none of the 2 query ids of the traces (first 'q1'; the qrels' first 'Q1')" in caught.value.rule
    qrels.write_text("Q1 0 a 1\nq2 0 b 1\n")
    check_trace_records(config, "run.yaml")


@pytest.mark.parametrize("unreadable", ["umbrela", "grade"])
def test_replies_that_are_all_unparseable_stop_with_their_statuses_not_a_missing_column(tmp_path, monkeypatch,
                                                                                       unreadable):
    """Every UMBRELA reply, or every grade, unreadable (through the loopback server): the line that
    stops the run names what happened and the statuses recorded."""
    monkeypatch.setenv("RR_TEST_KEY", "sk-test")
    path = _write(tmp_path / "prod.jsonl", [_trace(f"q{n}", [f"d{n}", f"e{n}"]) for n in range(3)])
    texts, traces, _ = read_traces([path])

    def answer(messages: list[dict]) -> str:
        if "final score" in messages[-1]["content"]:
            return "I cannot say." if unreadable == "umbrela" else "##final score: 3"
        return "Unsure." if unreadable == "grade" else "4"

    prompts = {"umbrela": load_prompt(REPO / "resources/prompts/umbrela.txt", UMBRELA_FIELDS),
               "context": load_prompt(REPO / "resources/prompts/grade_context.txt", GRADE_CONTEXT_FIELDS,
                                      needs_reask=True)}
    with OpenAIServer(answer=answer) as server:
        client = LLMClient(ModelConfig("openai/loopback", api_base=server.base_url, api_key_env="RR_TEST_KEY",
                                       max_tokens=20), PacingConfig(), ResponseCache(tmp_path / "cache"))
        judgments = judge_documents(judged_pairs([(traces, texts)]), ["umbrela"], {"umbrela": client},
                                    {"umbrela": prompts["umbrela"]})
        grades = grade_traces(traces, texts, client, context_prompt=prompts["context"])
    if unreadable == "umbrela":
        with pytest.raises(JobFailure) as failed:
            collect_traces(traces, texts, grades, judgments)
        assert str(failed.value).startswith(f"none of the 3 traces of {path} is left for the analysis: 3 unlabelled "
                                            "(a document without an UMBRELA label; UMBRELA statuses of the 6 "
                                            "judgments: unparseable_label 6)")
        return
    table, _ = collect_traces(traces, texts, grades, judgments)
    with pytest.raises(InputError) as caught:
        analysis_tables(table, segmentation="fit", alpha_grid="linear:3", min_segment_samples=2)
    assert str(caught.value).startswith("graded table: targets: no target has a value on any of its 3 samples "
                                        "(grade_context: status_context unparseable_grade 3; feedback: null throughout")
    assert "column grade" not in str(caught.value)


@pytest.mark.parametrize("grade", ["1e300", "-1e300", "1e-300", "1" + "0" * 400, "inf", "-inf", "nan", "1e999",
                                   "Infinity", "2.0"])
def test_a_qrels_grade_that_is_no_bounded_integer_is_refused_in_one_line(tmp_path, grade):
    """The judgments' numeric field, over the extreme numbers: one line naming the qrels line."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q1 0 a 1\nq1 0 b {grade}\n")
    with pytest.raises(InputError) as caught:
        read_traces([_write(tmp_path / "prod.jsonl", [_trace("q1", ["a", "b"])])], qrels=qrels)
    assert str(caught.value).startswith(f"{qrels}: line 2: relevance ") and len(str(caught.value)) < 400


LONG_ID = "q" * 10_000


@pytest.mark.parametrize("records", [
    [_trace(LONG_ID, ["a"]), _trace(LONG_ID, ["a"])],
    [_trace(LONG_ID, ["a"]), _trace(LONG_ID, ["a"], system="s2") | {"query": "another?"}],
    [_trace("q1", ["a"]), _trace("q2", [LONG_ID, LONG_ID])],
    [_trace("q1", ["a"], feedback=LONG_ID)],
    [_trace("q1", ["a"], system=LONG_ID)],
], ids=["second trace", "two texts", "repeated document", "unmapped label", "system"])
def test_a_10000_character_value_is_cut_in_its_error_line(tmp_path, records):
    path = _write(tmp_path / "prod.jsonl", records)
    with pytest.raises(InputError) as caught:
        read_traces([path])
    line = str(caught.value)
    assert line.startswith(f"{path}: line ") and "\n" not in line and len(line) < 600, len(line)
    assert "q" * 100 + "...(10000 characters)" in line


@pytest.mark.parametrize("targets", [["grade"], ["grade", "grade_expected"], ["answer_f1"]])
def test_a_config_without_traces_keeps_the_targets_its_pools_give(targets):
    """The traces' target check reads traces datasets only: the shipped default config, which asks
    for the LLM grades, passes it."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["analysis"]["targets"] = targets
    config.setdefault("llm", {}).setdefault("grader", {})
    check_trace_records(config, "config.yaml")
