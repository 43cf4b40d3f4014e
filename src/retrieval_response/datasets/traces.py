"""The ``traces`` layout: what a deployed RAG system logs, read into the tables the workflow judges
and analyses (docs/TRACES.md).

A traces file is JSON lines (or a JSON array), one object per answered query::

    {"query_id": "q17", "query": "Who wrote Dune?", "docs": [{"id": "d3", "text": "Dune is ..."}],
     "answer": "Frank Herbert.", "feedback": 1, "gold": ["Frank Herbert"], "system": "bm25-v2"}

Required: ``query_id`` (a non-empty string), ``query`` (a non-blank string), ``docs`` (a non-empty
array of objects, each with a non-empty string ``id`` and a non-blank string ``text``, in rank order,
ids distinct within the trace), ``answer`` (a non-blank string: what the system answered from those
documents). Optional: ``feedback`` (a finite number, or a string label that
``datasets.<name>.feedback_labels`` maps to one; null or absent = no feedback), ``gold`` (a string
or an array of strings: gold answers), ``system`` (a safe name: the system or version, which plays
the ranker's role; null or absent = the file's name without its suffix). Other fields are ignored.

Every bad record is reported, one line each (``<file>: line N: <rule>``), and nothing is returned;
besides the rules above: a second trace of one (system, query id), a query id with two query texts,
and a document id with two texts across the dataset.

Read into (:func:`read_traces`):

- the texts table, one row per query (ids ``<subset>-<n>`` numbered in order of first appearance,
  ``source_id`` = the query id): ``p`` = the retrieved documents the qrels judge relevant (none
  without qrels), ``n`` = the other retrieved documents, distinct, in order of first appearance over
  the systems, ``p_doc``/``n_doc`` their ids, ``answers`` the gold answers (union over its
  traces), ``Np_qrels`` the number of the query's relevant documents in the qrels (null without qrels
  or when the qrels do not judge the query), ``n_judged`` whether the qrels judge each of ``n``;
- the traces table, one row per trace, in the ranked layout the document judgments read: ``id,
  subset, E`` (the system), ``Nc = len(p) + len(n)``, ``Np = len(p)`` (the candidate-index
  convention: index i < Np is positive i), ``K = [number of documents of the trace]``, ``rank`` (the
  documents' candidate indexes in rank order), plus ``answer``, ``feedback`` (f64, null = none),
  ``file`` and ``record`` (where the trace came from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from retrieval_response.datasets.judged_corpus import trec_judgements
from retrieval_response.datasets.layouts import NUMBERED_SUBSETS, TRACES_LAYOUT
from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.json_records import finite_float, json_type, read_json_records
from retrieval_response.infra.paths import is_safe_name, safe_name

SUBSET = NUMBERED_SUBSETS[TRACES_LAYOUT]
"""Default subset and id prefix of a traces dataset's queries."""
REQUIRED = ("query_id", "query", "docs", "answer")

TEXTS_SCHEMA = {
    "id": pl.String, "subset": pl.String, "q": pl.String, "p": pl.List(pl.String), "n": pl.List(pl.String),
    "answers": pl.List(pl.String), "p_doc": pl.List(pl.String), "n_doc": pl.List(pl.String),
    "source_id": pl.String, "Np_qrels": pl.Int32, "n_judged": pl.List(pl.Boolean),
}
TRACES_SCHEMA = {
    "id": pl.String, "subset": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
    "rank": pl.List(pl.Int32), "answer": pl.String, "feedback": pl.Float64, "file": pl.String, "record": pl.String,
}


def _nonblank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _feedback(value: object, labels: Mapping[str, float]) -> tuple[float | None, str | None]:
    """(feedback value, rule broken or None) of a record's ``feedback``."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, "feedback must be a number or a label, not a boolean (map labels with feedback_labels)"
    if isinstance(value, int | float):
        number = finite_float(value)
        if number is None:
            return None, f"feedback {value!r} is not a finite number (a float64 number: |feedback| < 1.8e308)"
        return number, None
    if isinstance(value, str):
        if value in labels:
            return float(labels[value]), None
        known = ", ".join(sorted(labels)) or "none"
        return None, (f"feedback label {value!r} is not mapped to a number: add it to the dataset's feedback_labels "
                      f"(mapped now: {known})")
    return None, f"feedback must be a number or a string label, found {json_type(value)}"


def _gold(value: object) -> tuple[list[str], str | None]:
    if value is None:
        return [], None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [], f"gold must be a string or an array of strings, found {json_type(value)}"
    return [v.strip() for v in value if v.strip()], None


def _docs(value: object) -> tuple[list[tuple[str, str]], str | None]:
    if not isinstance(value, list):
        return [], f"docs must be an array of documents, found {json_type(value)}"
    if not value:
        return [], "docs is empty: a trace needs the documents the answer was written from"
    docs, seen = [], set()
    for position, doc in enumerate(value, start=1):
        if not isinstance(doc, dict):
            return [], f"docs[{position}] must be an object with id and text, found {json_type(doc)}"
        absent = [key for key in ("id", "text") if key not in doc]
        if absent:
            return [], f"docs[{position}] has no {' and no '.join(absent)}: each document is {{\"id\", \"text\"}}"
        doc_id, text = doc["id"], doc["text"]
        if not isinstance(doc_id, str) or not doc_id:
            return [], f"docs[{position}].id must be a non-empty string, found {json_type(doc_id)}"
        if not _nonblank(text):
            return [], f"docs[{position}].text must be a non-blank string, found {json_type(text)}"
        if doc_id in seen:
            return [], f"docs[{position}].id {doc_id!r} is repeated within the trace"
        seen.add(doc_id)
        docs.append((doc_id, text))
    return docs, None


def parse_trace(data: dict, labels: Mapping[str, float], default_system: str | None) -> tuple[dict | None, str | None]:
    """One record's trace ``{query_id, query, docs: [(id, text)], answer, feedback, gold, system}``,
    or the first rule it breaks (module docstring)."""
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        return None, f"missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    if not isinstance(data["query_id"], str) or not data["query_id"]:
        return None, f"query_id must be a non-empty string, found {json_type(data['query_id'])}"
    if not _nonblank(data["query"]):
        return None, f"query must be a non-blank string, found {json_type(data['query'])}"
    if not _nonblank(data["answer"]):
        return None, f"answer must be a non-blank string, found {json_type(data['answer'])}"
    docs, rule = _docs(data["docs"])
    if rule:
        return None, rule
    feedback, rule = _feedback(data.get("feedback"), labels)
    if rule:
        return None, rule
    gold, rule = _gold(data.get("gold"))
    if rule:
        return None, rule
    safe = "1 to 100 ASCII letters, digits and . _ + -, starting with a letter or digit"
    system = data.get("system")
    if system is None and default_system is None:
        return None, f"no system, and the file's name cannot be one: add a system field or rename the file ({safe})"
    system = default_system if system is None else system
    if not is_safe_name(system):
        return None, f"system {system!r} cannot be used in a file name: use {safe}"
    return {"query_id": data["query_id"], "query": data["query"].strip(), "docs": docs, "answer": data["answer"],
            "feedback": feedback, "gold": gold, "system": system}, None


def file_system(path: str | Path) -> str | None:
    """The default system of a traces file: its name without the suffix, when a safe name."""
    stem = Path(path).name.split(".")[0]
    return stem if is_safe_name(stem) else None


def read_trace_records(paths: Sequence[str | Path], labels: Mapping[str, float] | None = None
                       ) -> list[tuple[str, str, dict]]:
    """(file, record label, trace) of every record of ``paths``, in file and record order; every bad
    record raised at once (``infra.errors.raise_all``, one line each)."""
    labels = dict(labels or {})
    errors: list[InputError] = []
    traces = []
    first_of: dict[tuple[str, str], str] = {}
    query_text: dict[str, tuple[str, str]] = {}
    doc_text: dict[str, tuple[str, str]] = {}
    for path in paths:
        default = file_system(path)
        for record in read_json_records(path):
            where = f"{path} {record.label}"
            trace, rule = parse_trace(record.data, labels, default)
            # a bad record's query text still counts, so that every clash shows in one pass
            query_id, query = record.data.get("query_id"), record.data.get("query")
            if isinstance(query_id, str) and query_id and _nonblank(query):
                known = query_text.setdefault(query_id, (query.strip(), where))
                if rule is None and known[0] != query.strip():
                    rule = (f"query {query_id!r} has two texts, {query.strip()!r} here and "
                            f"{known[0]!r} at {known[1]}: give one text per query_id")
            if rule is None:
                key = (trace["system"], trace["query_id"])
                if key in first_of:
                    rule = (f"a second trace of query {key[1]!r} by system {key[0]!r} (the first is at "
                            f"{first_of[key]}): one trace per system and query_id")
            if rule is None:
                clash = next(((d, doc_text[d][1]) for d, t in trace["docs"]
                              if doc_text.setdefault(d, (t, where))[0] != t), None)
                if clash:
                    rule = (f"document {clash[0]!r} has another text at {clash[1]}: give one text per document id "
                            "in the dataset")
            if rule is not None:
                errors.append(InputError(path, record.label, rule))
                continue
            first_of[key] = where
            traces.append((str(path), record.label, trace))
    raise_all(errors)
    if not traces:
        raise InputError(", ".join(map(str, paths)), "file", "no traces (expected at least one record)")
    return traces


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """{query id: {document id: grade}} of a TREC qrels file (``qid iter docno rel``); InputError
    for a malformed line or a repeated (query, document) pair."""
    qrels: dict[str, dict[str, int]] = {}
    for query, doc, grade, label in trec_judgements(Path(path)):
        if doc in qrels.setdefault(query, {}):
            raise InputError(path, label, f"(query {query!r}, document {doc!r}) is judged twice")
        qrels[query][doc] = grade
    return qrels


def read_traces(paths: Sequence[str | Path], *, feedback_labels: Mapping[str, float] | None = None,
                subset: str | None = None, qrels: str | Path | None = None) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(texts table, traces table, report) of the traces files ``paths`` (module docstring), with the
    optional TREC ``qrels`` (by the traces' query and document ids; grade > 0 is relevant)."""
    subset = safe_name(subset or SUBSET, "subset")
    traces = read_trace_records(paths, feedback_labels)
    judged = read_qrels(qrels) if qrels else None
    queries: dict[str, dict] = {}
    for _, _, trace in traces:
        query = queries.setdefault(trace["query_id"], {"q": trace["query"], "docs": {}, "gold": {}})
        for doc_id, text in trace["docs"]:
            query["docs"].setdefault(doc_id, text)
        query["gold"].update(dict.fromkeys(trace["gold"]))
    texts_rows, index_of = [], {}
    for number, (query_id, query) in enumerate(queries.items(), start=1):
        grades = (judged or {}).get(query_id, {})
        positive = [d for d in query["docs"] if grades.get(d, 0) > 0]
        negative = [d for d in query["docs"] if grades.get(d, 0) <= 0]
        index_of[query_id] = {d: i for i, d in enumerate(positive + negative)}
        texts_rows.append({
            "id": f"{subset}-{number}", "subset": subset, "q": query["q"],
            "p": [query["docs"][d] for d in positive], "n": [query["docs"][d] for d in negative],
            "answers": list(query["gold"]), "p_doc": positive, "n_doc": negative, "source_id": query_id,
            "Np_qrels": (sum(g > 0 for g in grades.values()) if judged is not None and query_id in judged else None),
            "n_judged": [d in grades for d in negative],
        })
    texts = pl.DataFrame(texts_rows, schema=TEXTS_SCHEMA)
    ids = dict(zip(texts["source_id"], texts["id"], strict=True))
    sizes = {row["source_id"]: (len(row["p"]) + len(row["n"]), len(row["p"])) for row in texts_rows}
    trace_rows = [{
        "id": ids[t["query_id"]], "subset": subset, "E": t["system"], "Nc": sizes[t["query_id"]][0],
        "Np": sizes[t["query_id"]][1], "K": [len(t["docs"])], "rank": [index_of[t["query_id"]][d] for d, _ in t["docs"]],
        "answer": t["answer"], "feedback": t["feedback"], "file": path, "record": label,
    } for path, label, t in traces]
    table = pl.DataFrame(trace_rows, schema=TRACES_SCHEMA).sort("id", "E")
    report = {
        "source": [str(p) for p in paths], "layout": "traces", "traces": table.height, "queries": texts.height,
        "systems": sorted(set(table["E"])), "with_feedback": int(table["feedback"].is_not_null().sum()),
        "with_gold": int(texts["answers"].list.len().gt(0).sum()),
        "distinct_documents": int(texts.select(pl.concat_list("p_doc", "n_doc").list.len()).sum().item()),
        "qrels": str(qrels) if qrels else None,
        "queries_in_qrels": int(texts["Np_qrels"].is_not_null().sum()) if qrels else 0,
    }
    return texts, table, report



def qrels_judged_texts(texts: pl.DataFrame) -> pl.DataFrame:
    """``id, p, n`` of a traces texts table with ``n`` cut to the documents the qrels judge (not
    relevant), so that UMBRELA's agreement with the qrels (``analysis.umbrela_qrels_agreement``) counts
    judged pairs only; queries the qrels do not judge are left out."""
    return (texts.filter(pl.col("Np_qrels").is_not_null())
            .select("id", "p", n=pl.col("n").list.gather(pl.col("n_judged").list.eval(pl.element().arg_true()))))
