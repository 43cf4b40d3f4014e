"""The traces layout (datasets/traces.py), its analysis table (tables/collect.py) and the verdict on
traces: bad records one line each, measures needing Np not computable, P and T alike at one K, and
feedback driven by the first relevant document's position putting RR or nDCG ahead of P."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from retrieval_response.analysis.measures import MEASURES, NEEDS_NP, NOT_COMPUTABLE
from retrieval_response.datasets.traces import read_traces
from retrieval_response.decide.verdict import verdict_table
from retrieval_response.infra.errors import InputError, InputErrors
from retrieval_response.tables.collect import collect_traces

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
    assert texts["id"].to_list() == ["Tr-1", "Tr-2"] and texts["source_id"].to_list() == ["q1", "q2"]
    q1 = texts.row(0, named=True)
    assert (q1["p_doc"], q1["n_doc"], q1["n_judged"], q1["Np_qrels"]) == (["a"], ["b", "c", "d"], [False, False, True], 2)
    assert q1["answers"] == ["Alpha"] and texts["Np_qrels"][1] is None
    by_system = {row["E"]: row for row in traces.iter_rows(named=True)}
    assert by_system["bm25"]["rank"] == [0, 1] and by_system["dense"]["rank"] == [2, 0, 3]
    assert by_system["dense"]["K"] == [3] and by_system["bm25"]["feedback"] == 1.0
    assert by_system["v1"]["feedback"] is None, "without a system field the file's name is the system"
    assert report["systems"] == ["bm25", "dense", "v1"] and report["traces"] == 3


def test_every_bad_record_gets_one_line_and_nothing_is_read(tmp_path):
    good = _trace("q0", ["a"])
    bad = [
        ({"query": "q?", "docs": [], "answer": "x"}, "missing field query_id"),
        (_trace(7, ["a"]), "query_id must be a non-empty string, found integer"),
        (_trace("q2", ["a"]) | {"answer": ["x"]}, "answer must be a non-blank string, found array"),
        (_trace("q3", []), "docs is empty"),
        (_trace("q4", ["a"]) | {"docs": "a"}, "docs must be an array of documents, found string"),
        (_trace("q5", ["a", "b", "a"]), "docs[3].id 'a' is repeated within the trace"),
        (_trace("q6", ["a"]) | {"docs": [{"id": "a", "text": 3}]}, "docs[1].text must be a non-blank string"),
        ('{"query_id": "q7", "query": "q?", "docs": [{"id": "a", "text": "text of a"}], "answer": "x", '
         '"feedback": NaN}', "feedback nan is not a finite number"),
        (_trace("q8", ["a"], feedback="meh"), "feedback label 'meh' is not mapped to a number"),
        (_trace("q9", ["a"], feedback=True), "feedback must be a number or a label, not a boolean"),
        (_trace("q10", ["a"], gold=[1]), "gold must be a string or an array of strings"),
        (_trace("q11", ["a"], system="../x"), "system '../x' cannot be used in a file name"),
        (_trace("q0", ["a"]), "a second trace of query 'q0' by system 'traces'"),
        (_trace("q0", ["a"], system="s2") | {"query": "another?"}, "query 'q0' has another text"),
        (_trace("q12", ["a"]) | {"docs": [{"id": "a", "text": "other"}]}, "document 'a' has another text"),
        ("[1, 2]", "expected a JSON object"),
    ]
    path = _write(tmp_path / "traces.jsonl", [good, *(record for record, _ in bad)])
    with pytest.raises(InputError) as caught:
        read_traces([path], feedback_labels={"up": 1})
    error = caught.value
    if isinstance(error, InputErrors):
        lines = str(error).splitlines()
    else:
        lines = [str(error)]
    # a record that is not an object stops the JSON reader itself: it is the one line then
    assert lines == [f"{path}: line 17: expected a JSON object, found array"]
    path = _write(tmp_path / "traces.jsonl", [good, *(record for record, _ in bad[:-1])])
    with pytest.raises(InputErrors) as caught:
        read_traces([path], feedback_labels={"up": 1})
    lines = str(caught.value).splitlines()
    assert len(lines) == len(bad) - 1
    for number, (line, (_, rule)) in enumerate(zip(lines, bad[:-1], strict=True), start=2):
        assert line.startswith(f"{path}: line {number}: ") and rule in line, line


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
    best = verdict.filter(pl.col("decision") == "best")["measure"].to_list()
    assert best and best[0] in ("RR@K", "nDCG"), decisions
    assert decisions["P"] == "worse", decisions


def test_measures_needing_np_are_not_computable_and_t_orders_as_p(tmp_path):
    table = _analysis(tmp_path, *_constructed(30, seed=2))
    verdict = verdict_table(table, targets=["feedback"], **OPTIONS)
    rows = {row["measure"]: row for row in verdict.iter_rows(named=True)}
    for name in ("F", "R", "nDCG@K", "AP@K"):
        assert MEASURES[name].needs_Np and name in NEEDS_NP
        assert (rows[name]["decision"], rows[name]["reason"], rows[name]["n"]) == ("undecided", NOT_COMPUTABLE, 0)
    assert not {"P", "T", "nDCG", "RR@K"} & set(NEEDS_NP)
    assert rows["T"]["decision"] == "undecided" and rows["T"]["same_as"] == "P"
    assert "at the one K = 5 of this segment (and no Np)" in rows["T"]["reason"]
    assert "by construction, not a finding" in rows["T"]["reason"]
    assert rows["RR@K"]["value"] is not None and rows["nDCG"]["value"] is not None
