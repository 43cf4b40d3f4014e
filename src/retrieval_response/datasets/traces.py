"""The ``traces`` layout: what a deployed RAG system logs, read into the tables the workflow judges
and analyses (docs/TRACES.md).

A traces file is JSON lines (or a JSON array), one object per answered query::

    {"query_id": "q17", "query": "Who wrote Dune?", "docs": [{"id": "d3", "text": "Dune is ..."}],
     "answer": "Frank Herbert.", "feedback": 1, "gold": ["Frank Herbert"], "system": "bm25-v2"}

Required: ``query_id`` (a non-empty string), ``query`` (a non-blank string), ``docs`` (a non-empty
array of objects, each with a non-empty string ``id`` and a non-blank string ``text``, in rank order,
ids distinct within the trace), ``answer`` (a non-blank string: what the system answered from those
documents). Optional: ``feedback`` (a finite number, or a string label that
``datasets.<name>.feedback_labels`` maps to one; null, absent or a blank string = no feedback,
unless ``feedback_labels`` maps the empty label ``""``), ``gold`` (a string or an array of strings:
gold answers), ``time`` (an ISO 8601 date or date and time string, ``2026-03-01`` or
``2026-03-01T14:05:00+01:00``, :func:`trace_time`: when the query was answered, which the
monitor's periods read; null or absent = unknown), ``system`` (a safe name that does not look like a secret,
``infra.secrets.looks_like_secret``: the system or version, which plays the ranker's role; null or
absent = the file's name without its traces extension, :func:`file_system`). Other fields are
ignored.

Every bad record is reported and nothing is returned: one line per rule broken and file, naming
every record that breaks it (``<file>: line N: <rule>``, ``<file>: lines N, M, ...: <rule>``), so
no message repeats; besides the rules above: a second trace of one (system, query id), a query id
with two query texts, and a document id with two texts across the dataset. Before them, one line
per pair of files that a system would silently join: a system taken from one file's name that
another file's records also have (from its name or their ``system`` field), e.g. ``a/bm25.jsonl``
and ``b/bm25.jsonl``. A file that is not JSON (a CSV, say: its first character is neither ``{``
nor ``[``) is refused in one line.

``sample`` keeps the traces of a sample of the queries only (:func:`sample_queries`: stratified by
system, drawn with ``seed``), so that only those are judged and graded.

Read into (:func:`read_traces`):

- the texts table, one row per query (``id`` = the team's query id, kept as it is, as
  ``source_id``; ``subset`` = the dataset's subset, in the workflow its ``subset`` key, else its
  name): ``p`` = the retrieved documents the qrels judge relevant (none
  without qrels), ``n`` = the other retrieved documents, distinct, in order of first appearance over
  the systems, ``p_doc``/``n_doc`` their ids, ``answers`` the gold answers (union over its
  traces), ``Np_qrels`` the number of the query's relevant documents in the qrels (null without qrels
  or when the qrels do not judge the query), ``n_judged`` whether the qrels judge each of ``n``;
- the traces table, one row per trace, in the ranked layout the document judgments read: ``id,
  subset, E`` (the system), ``Nc = len(p) + len(n)``, ``Np = len(p)`` (the candidate-index
  convention: index i < Np is positive i), ``K = [number of documents of the trace]``, ``rank`` (the
  documents' candidate indexes in rank order), plus ``answer``, ``feedback`` (f64, null = none),
  ``time`` (UTC datetime, null = none), ``file`` and ``record`` (where the trace came from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import polars as pl

from retrieval_response.datasets.judged_corpus import trec_judgements
from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.json_records import existing_file, finite_float, json_type, read_json_records
from retrieval_response.infra.paths import is_safe_name, safe_name
from retrieval_response.infra.secrets import looks_like_secret

SUBSET = "traces"
"""The subset of traces read without one (the workflow gives the dataset's ``subset``, else its name)."""
NOT_JSON = "traces are JSON lines, JSON or Parquet"
"""The rule a traces file breaks when it is not JSON (a CSV, say)."""
MAX_LISTED = 10
"""Records a line of a rule broken by many lists before counting the rest."""
REQUIRED = ("query_id", "query", "docs", "answer")

TEXTS_SCHEMA = {
    "id": pl.String, "subset": pl.String, "q": pl.String, "p": pl.List(pl.String), "n": pl.List(pl.String),
    "answers": pl.List(pl.String), "p_doc": pl.List(pl.String), "n_doc": pl.List(pl.String),
    "source_id": pl.String, "Np_qrels": pl.Int32, "n_judged": pl.List(pl.Boolean),
}
TRACES_SCHEMA = {
    "id": pl.String, "subset": pl.String, "E": pl.String, "Nc": pl.Int32, "Np": pl.Int32, "K": pl.List(pl.Int32),
    "rank": pl.List(pl.Int32), "answer": pl.String, "feedback": pl.Float64, "time": pl.Datetime("us", "UTC"),
    "file": pl.String, "record": pl.String,
}


def _nonblank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _feedback(value: object, labels: Mapping[str, float]) -> tuple[float | None, str | None]:
    """(feedback value, rule broken or None) of a record's ``feedback``."""
    if value is None or (isinstance(value, str) and not value.strip() and value not in labels):
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


def trace_time(value: object) -> tuple[datetime | None, str | None]:
    """(UTC datetime, rule broken or None) of a record's ``time``: null or absent = none; else an
    ISO 8601 string, a date (``2026-03-01``, its midnight) or a date and time (``2026-03-01T14:05``,
    ``...Z``, ``...+01:00``; without an offset, UTC), as :meth:`datetime.fromisoformat` reads it."""
    if value is None:
        return None, None
    rule = "time must be an ISO 8601 date or date and time string (2026-03-01 or 2026-03-01T14:05:00Z)"
    if not isinstance(value, str):
        return None, f"{rule}, found {json_type(value)}"
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text) if "T" in text or " " in text else date.fromisoformat(text)
    except ValueError:
        return None, f"{rule}, found {value[:40]!r}"
    if not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day)
    return (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)), None


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
    """One record's trace ``{query_id, query, docs: [(id, text)], answer, feedback, gold, time, system}``,
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
    time, rule = trace_time(data.get("time"))
    if rule:
        return None, rule
    safe = "1 to 100 ASCII letters, digits and . _ + -, starting with a letter or digit"
    system = data.get("system")
    if system is None and default_system is None:
        return None, f"no system, and the file's name cannot be one: add a system field or rename the file ({safe})"
    system = default_system if system is None else system
    if not is_safe_name(system):
        return None, f"system {system!r} cannot be used in a file name: use {safe}"
    if looks_like_secret(system):
        return None, "system looks like an API key or token, which would reach every result (the value is not shown)"
    return {"query_id": data["query_id"], "query": data["query"].strip(), "docs": docs, "answer": data["answer"],
            "feedback": feedback, "gold": gold, "time": time, "system": system}, None


TRACES_EXTENSIONS = (".jsonl", ".ndjson", ".json")
"""The extensions of a traces file (JSON lines or a JSON array) that its default system leaves out."""


def file_system(path: str | Path) -> str | None:
    """The default system of a traces file: its name without its traces extension (one of
    :data:`TRACES_EXTENSIONS`, in any case; any other suffix stays: ``bm25.v1.jsonl`` is
    ``bm25.v1``, ``bm25.v1.txt`` is ``bm25.v1.txt``), when that is a safe name; None otherwise."""
    name = Path(path).name
    extension = next((e for e in TRACES_EXTENSIONS if name.lower().endswith(e) and len(name) > len(e)), "")
    stem = name[: len(name) - len(extension)]
    return stem if is_safe_name(stem) else None


def joined_systems(systems: Mapping[str, Mapping[str, bool]]) -> list[InputError]:
    """One InputError per pair of files that share a system taken from a file's name:
    ``systems[file][system]`` is True when the file's records took ``system`` from its name (no
    ``system`` field), False when their field names it; the error is raised at the later file of
    the pair and names both. Two files whose records all name their system may share it."""
    errors, files = [], list(systems)
    for later_index, later in enumerate(files):
        for earlier in files[:later_index]:
            shared = sorted(s for s in set(systems[earlier]) & set(systems[later]) if systems[earlier][s] or systems[later][s])
            if not shared:
                continue
            system = shared[0]
            how = {True: "from its name", False: "in its records' system field"}
            errors.append(InputError(later, "file", (
                f"system {system!r} comes from both {earlier} ({how[systems[earlier][system]]}) and this file "
                f"({how[systems[later][system]]}): two files would join into one system; give the records a "
                "system field of their own, or rename a file")))
            break
    return errors


def _json_records(path: str | Path) -> list:
    """The records of a traces file (``infra.json_records``); :data:`NOT_JSON` in one line when its
    first non-blank character is neither ``{`` nor ``[``."""
    source = existing_file(path)
    with source.open("rb") as handle:
        head = handle.read(4096).lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
    if head and head[:1] not in (b"{", b"["):
        first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
        raise InputError(path, "file", f"{NOT_JSON}, one object per trace: its first line {first!r} is not "
                                       "a JSON object (a CSV? write one JSON object per line)")
    return read_json_records(source)


def grouped_errors(errors: Sequence[InputError]) -> list[InputError]:
    """``errors`` with the records breaking one rule of one file in one error, at the place of the
    first: record ``lines N, M, ...`` (at most :data:`MAX_LISTED`, then ``and K more``)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for error in errors:
        groups.setdefault((error.path, error.rule), []).append(error.record)
    out = []
    for (path, rule), records in groups.items():
        if len(records) == 1:
            out.append(InputError(path, records[0], rule))
            continue
        words = [r.split(" ", 1) for r in records]
        kind = words[0][0] if all(len(w) == 2 and w[0] == words[0][0] for w in words) else None
        listed = ", ".join(w[1] for w in words[:MAX_LISTED]) if kind else ", ".join(records[:MAX_LISTED])
        more = f" and {len(records) - MAX_LISTED} more" if len(records) > MAX_LISTED else ""
        out.append(InputError(path, f"{kind}s {listed}{more}" if kind else f"{listed}{more}", rule))
    return out


def read_trace_records(paths: Sequence[str | Path], labels: Mapping[str, float] | None = None
                       ) -> list[tuple[str, str, dict]]:
    """(file, record label, trace) of every record of ``paths``, in file and record order; every bad
    record raised at once (``infra.errors.raise_all``), one line per rule and file
    (:func:`grouped_errors`)."""
    labels = dict(labels or {})
    errors: list[InputError] = []
    systems: dict[str, dict[str, bool]] = {}  # file -> {system: taken from the file's name}
    traces = []
    first_of: dict[tuple[str, str], str] = {}
    query_text: dict[str, tuple[str, str]] = {}
    doc_text: dict[str, tuple[str, str]] = {}
    for path in paths:
        default = file_system(path)
        for record in _json_records(path):
            where = f"{path} {record.label}"
            trace, rule = parse_trace(record.data, labels, default)
            if trace is not None:
                named = systems.setdefault(str(path), {})
                named[trace["system"]] = named.get(trace["system"], False) or record.data.get("system") is None
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
    raise_all(joined_systems(systems) + grouped_errors(errors))
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


def sample_queries(traces: Sequence[tuple[str, str, dict]], n: int, seed: int = 0) -> set[str]:
    """The query ids of a sample of min(``n``, all) queries of ``traces`` (:func:`read_trace_records`),
    stratified by system: the queries in a random order drawn with ``seed`` (over the sorted ids),
    a query is taken while one of the systems that answered it has fewer than its quota,
    round(n x its queries / all queries), then the rest in that order up to ``n``. Every system
    thus keeps its share of the queries, and a query taken keeps its traces of every system (the
    systems are compared on the same queries)."""
    systems_of: dict[str, set[str]] = {}
    for _, _, trace in traces:
        systems_of.setdefault(trace["query_id"], set()).add(trace["system"])
    queries = sorted(systems_of)
    if n >= len(queries):
        return set(queries)
    sizes: dict[str, int] = {}
    for owners in systems_of.values():
        for system in owners:
            sizes[system] = sizes.get(system, 0) + 1
    quota = {system: round(n * size / len(queries)) for system, size in sizes.items()}
    order = [queries[i] for i in np.random.default_rng(seed).permutation(len(queries))]
    chosen: dict[str, None] = {}
    for query in order:
        if len(chosen) == n:
            break
        owners = systems_of[query]
        if any(quota[s] > 0 for s in owners):
            chosen[query] = None
            for system in owners:
                quota[system] -= 1
    for query in order:
        if len(chosen) == n:
            break
        chosen.setdefault(query, None)
    return set(chosen)


def read_traces(paths: Sequence[str | Path], *, feedback_labels: Mapping[str, float] | None = None,
                subset: str | None = None, qrels: str | Path | None = None, sample: int | None = None,
                seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(texts table, traces table, report) of the traces files ``paths`` (module docstring), with the
    optional TREC ``qrels`` (by the traces' query and document ids; grade > 0 is relevant); with
    ``sample``, the traces of :func:`sample_queries`' queries only (the report's ``sample``: queries
    kept, of how many, seed)."""
    subset = safe_name(subset or SUBSET, "subset")
    traces = read_trace_records(paths, feedback_labels)
    all_queries = len({t["query_id"] for _, _, t in traces})
    if sample is not None:
        kept = sample_queries(traces, sample, seed)
        traces = [record for record in traces if record[2]["query_id"] in kept]
    judged = read_qrels(qrels) if qrels else None
    queries: dict[str, dict] = {}
    for _, _, trace in traces:
        query = queries.setdefault(trace["query_id"], {"q": trace["query"], "docs": {}, "gold": {}})
        for doc_id, text in trace["docs"]:
            query["docs"].setdefault(doc_id, text)
        query["gold"].update(dict.fromkeys(trace["gold"]))
    texts_rows, index_of = [], {}
    for query_id, query in queries.items():
        grades = (judged or {}).get(query_id, {})
        positive = [d for d in query["docs"] if grades.get(d, 0) > 0]
        negative = [d for d in query["docs"] if grades.get(d, 0) <= 0]
        index_of[query_id] = {d: i for i, d in enumerate(positive + negative)}
        texts_rows.append({
            "id": query_id, "subset": subset, "q": query["q"],
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
        "answer": t["answer"], "feedback": t["feedback"], "time": t["time"], "file": path, "record": label,
    } for path, label, t in traces]
    table = pl.DataFrame(trace_rows, schema=TRACES_SCHEMA).sort("id", "E")
    report = {
        "source": [str(p) for p in paths], "layout": "traces", "traces": table.height, "queries": texts.height,
        "systems": sorted(set(table["E"])), "with_feedback": int(table["feedback"].is_not_null().sum()),
        "with_time": int(table["time"].is_not_null().sum()),
        "with_gold": int(texts["answers"].list.len().gt(0).sum()),
        "distinct_documents": int(texts.select(pl.concat_list("p_doc", "n_doc").list.len()).sum().item()),
        "qrels": str(qrels) if qrels else None,
        "queries_in_qrels": int(texts["Np_qrels"].is_not_null().sum()) if qrels else 0,
        "sample": None if sample is None else {"queries": texts.height, "of": all_queries, "seed": seed},
    }
    return texts, table, report



def qrels_judged_texts(texts: pl.DataFrame) -> pl.DataFrame:
    """``id, subset, p, n`` of a traces texts table with ``n`` cut to the documents the qrels judge (not
    relevant), so that UMBRELA's agreement with the qrels (``agreement.umbrela_qrels``) counts
    judged pairs only; queries the qrels do not judge are left out."""
    return (texts.filter(pl.col("Np_qrels").is_not_null())
            .select("id", "subset", "p", n=pl.col("n").list.gather(pl.col("n_judged").list.eval(pl.element().arg_true()))))
