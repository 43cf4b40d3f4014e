"""Build the shipped example traces: a BEIR corpus, BM25's top k, the configured generator's answers,
and a feedback column derived from the gold answers, clearly labelled a stand-in (docs/TRACES.md).

    python -m retrieval_response.examples.trace_builder --config config/traces.yaml \\
        [--beir resources/data/hotpotqa_beir] [--queries 50] [--k 5] [--seed 1] [--out FILE]

The queries are ``queries`` of the BEIR folder's queries with a judged positive, sampled by
``seed`` as corpus-level retrieval samples them (``layouts.prepare_judged_queries``); the documents
are each query's top ``k`` of the whole corpus by BM25 (``corpus_retrieval.bm25_retrieval``,
Lucene's BM25 with the workflow's defaults); the answer is the config's ``llm.generator`` given the
query and those documents with the answer prompt (``llm.prompts.answer``), through the library's
LLM client (response cache ``llm.cache``, pacing, retries, call journal): a rebuild is answered from
the cache. ``feedback`` is 1 when the answer contains a normalised gold answer (SQuAD v1.1
normalisation, ``answer_scores``), else 0, and the record says so in ``feedback_source``: a
stand-in for what users would say, not user feedback. The file is written atomically to ``--out``
(default: the config's first traces dataset's ``path``), one trace per line, system
``bm25-top<k>``. Secrets come from the environment only (the model section's ``api_key_env``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

from retrieval_response.analysis.answer_scores import best_scores
from retrieval_response.datasets.judged_corpus import beir_qrels
from retrieval_response.datasets.layouts import TRACES_LAYOUT, corpus_table, prepare_judged_queries
from retrieval_response.infra.atomic import write_text
from retrieval_response.infra.yaml_files import load_yaml
from retrieval_response.llm.jobs import client_from_config, job_threads
from retrieval_response.llm.prompts import ANSWER_FIELDS, format_references, load_prompt
from retrieval_response.ranking.corpus_retrieval import bm25_retrieval
from retrieval_response.ranking.lexical import bm25_settings
from retrieval_response.workflow_config.checks import check_secrets
from retrieval_response.workflow_config.defaults import with_defaults

FEEDBACK_SOURCE = ("stand-in for user feedback: 1 when the answer contains a gold answer (SQuAD-normalised), "
                   "else 0; not what users said")
"""The ``feedback_source`` of every example trace."""


def retrieved_traces(beir: str | Path, *, queries: int, k: int, seed: int) -> list[dict]:
    """The traces without answers: ``query_id, query, docs`` (BM25's top ``k`` of the corpus, in
    rank order) and ``gold``, for ``queries`` sampled queries of the BEIR folder ``beir``."""
    qrels = beir_qrels(beir)
    texts, _ = prepare_judged_queries("beir", qrels, n_queries=queries, seed=seed)
    corpus = corpus_table("beir", qrels)
    top = bm25_retrieval(texts["q"].to_list(), corpus["text"].to_list(), bm25_settings("BM25", {"backend": "bm25"}), k)
    ids, bodies = corpus["doc_id"].to_list(), corpus["text"].to_list()
    return [{"query_id": source, "query": q, "docs": [{"id": ids[i], "text": bodies[i]} for i in row],
             "gold": list(gold)}
            for source, q, gold, row in zip(texts["source_id"], texts["q"], texts["answers"], top.tolist(), strict=True)]


def answer_traces(traces: list[dict], client, prompt) -> list[dict]:
    """``traces`` with ``answer`` (the client's answer from the trace's documents; a trace whose
    call failed or came back empty is left out), ``feedback`` (gold-answer containment, 1/0) and
    ``feedback_source`` (:data:`FEEDBACK_SOURCE`)."""
    messages = [prompt.messages(query=t["query"], references=format_references([d["text"] for d in t["docs"]]))
                for t in traces]
    done = client.run_all([client.complete(m) for m in messages], "trace answers",
                          groups=[t["query_id"] for t in traces])
    answered = [(t, c.content.strip()) for t, c in zip(traces, done, strict=True) if c.ok and (c.content or "").strip()]
    scores = best_scores(pl.Series([a for _, a in answered], dtype=pl.String),
                         pl.Series([t["gold"] for t, _ in answered], dtype=pl.List(pl.String)))
    return [{**t, "answer": a, "feedback": None if contains is None else int(contains),
             "feedback_source": FEEDBACK_SOURCE}
            for (t, a), contains in zip(answered, scores["contains"].to_list(), strict=True)]


def build(config: dict, *, beir: str | Path, queries: int, k: int, seed: int, out: str | Path,
          log: str = "logs/build_traces.log") -> dict:
    """Build the example traces file ``out`` from ``config`` (schema defaults filled in) and return
    its summary: traces written, left out (failed answers), the client's calls and cache hits."""
    llm = config["llm"]
    prompt = load_prompt(llm["prompts"]["answer"], ANSWER_FIELDS)
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    client = client_from_config(llm["generator"], llm, job_threads(llm["generator"], None), "build_traces",
                                "example", log)
    traces = retrieved_traces(beir, queries=queries, k=k, seed=seed)
    system = f"bm25-top{k}"
    answered = [{**t, "system": system} for t in answer_traces(traces, client, prompt)]
    write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in answered), out)
    stats = client.stats.summary("build_traces", "example", 0.0)
    return {"out": str(out), "traces": len(answered), "left_out": len(traces) - len(answered),
            "calls": stats["calls"], "cache_hits": stats["cache_hits"], "system": system}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="the traces config (its llm section and dataset path)")
    parser.add_argument("--beir", default="resources/data/hotpotqa_beir", help="a BEIR folder")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="the traces file (default: the config's traces dataset's path)")
    args = parser.parse_args(argv)
    config = with_defaults(load_yaml(args.config), args.config)
    check_secrets(config, args.config)
    out = args.out or next(d["path"] for d in config["datasets"].values() if d["layout"] == TRACES_LAYOUT)
    summary = build(config, beir=args.beir, queries=args.queries, k=args.k, seed=args.seed, out=out)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
