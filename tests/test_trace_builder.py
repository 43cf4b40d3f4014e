"""The example traces builder (examples/trace_builder.py) against the loopback server: BM25's top k
of the shipped BEIR corpus, answers through the LLM client and its cache (a rebuild makes no call),
a feedback stand-in labelled as such, and a file the traces layout reads."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, loopback_model
from retrieval_response.datasets.traces import read_traces
from retrieval_response.examples.trace_builder import FEEDBACK_SOURCE, build
from retrieval_response.workflow_config.defaults import with_defaults

pytestmark = pytest.mark.unit


def test_the_builder_writes_readable_traces_and_a_rebuild_makes_no_call(loopback, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = loopback_model(loopback.base_url)
    config = with_defaults({"datasets": {}, "llm": {
        "generator": {**model, "max_tokens": 20}, "grader": model, "cache": str(tmp_path / "cache"),
        "prompts": {"answer": str(REPO / "resources/prompts/answer.txt")}}})
    out = tmp_path / "traces.jsonl"
    first = build(config, beir=REPO / "resources/data/hotpotqa_beir", queries=4, k=3, seed=1, out=out)
    assert (first["traces"], first["left_out"], first["calls"]) == (4, 0, 4)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(len(r["docs"]) == 3 and r["feedback"] in (0, 1) and r["gold"] for r in records)
    assert {r["feedback_source"] for r in records} == {FEEDBACK_SOURCE} and "stand-in" in FEEDBACK_SOURCE
    texts, traces, report = read_traces([out])
    assert (report["traces"], report["systems"]) == (4, ["bm25-top3"])
    second = build(config, beir=REPO / "resources/data/hotpotqa_beir", queries=4, k=3, seed=1, out=out)
    assert (second["calls"], second["cache_hits"]) == (0, 4)
