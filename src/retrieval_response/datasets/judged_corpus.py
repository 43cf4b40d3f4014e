"""BEIR folders and TREC qrels: a corpus, queries and graded judgements -> the texts table.

Both layouts are named by their qrels file (the dataset's ``path``); a BEIR dataset also by its
folder and a split, as BEIR's own loader takes it (:func:`beir_qrels`):

- ``beir``: ``<folder>/qrels/<split>.tsv`` with the header ``query-id corpus-id score``
  (tab-separated); the corpus is ``<folder>/corpus.jsonl`` (``_id``, ``text``, optional
  ``title``) and the queries ``<folder>/queries.jsonl`` (``_id``, ``text``).
- ``trec``: a qrels file of ``qid iter docno rel`` lines (white space separated, no header);
  the documents and queries lie beside it as ``documents.jsonl`` / ``queries.jsonl``
  (records ``id``, ``text``) or ``documents.tsv`` / ``queries.tsv`` (``id<TAB>text``, no header).

Ids are strings throughout (an integer ``_id`` is converted). A judged document's text is its
title and text joined by a newline (the text alone without a title). A BEIR query's gold answers
are its ``metadata.answers`` (or ``metadata.answer``), when given. Per query, the positives
``p`` are the documents judged > 0, highest grade first (qrels order within a grade), with their
grades in ``p_grade``; the negatives ``n`` are the documents judged <= 0, in qrels order.
``p_doc`` and ``n_doc`` hold the document ids of ``p`` and ``n``, position by position (a run
file names documents by these ids).
A query without judgements is left out (counted as ``queries_without_judgements``). Rows get
the id ``<subset>-<n>`` (subset ``B`` or ``T`` unless one is given, n the query's 0-based
position in the queries file) and ``source_id`` = the query's id. Every bad record is one InputError naming the file,
the line and the rule: a malformed line, a missing score, one that is not an ASCII integer within
+-``GRADE_BOUND`` (:func:`grade`), a repeated id, a
repeated (query, document) judgement, or a judged id absent from the corpus or the queries.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from retrieval_response.datasets.validation import TEXTS_COLUMNS, TEXTS_SCHEMA, check_unique, required_id, required_string
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import existing_file, iter_json_lines, read_text, text_lines
from retrieval_response.measures.ranked import GRADE_BOUND

BEIR_SUBSET, TREC_SUBSET = "B", "T"
"""The subsets (id prefixes) of the two layouts' rows when the config names none."""
BEIR_SPLIT = "test"
"""The qrels split of a BEIR folder named without one (BEIR's loader's default)."""
COLUMNS = (*TEXTS_COLUMNS, "p_grade", "p_doc", "n_doc", "source_id")
SCHEMA = {
    **TEXTS_SCHEMA, "p_grade": pl.List(pl.Int64), "p_doc": pl.List(pl.String), "n_doc": pl.List(pl.String),
    "source_id": pl.String,
}
BEIR_HEADER = ("query-id", "corpus-id", "score")
Judgement = tuple[str, str, int, str]
"""(query id, document id, grade, line label) of one qrels line."""


def lines_of(path: Path) -> list[tuple[str, str]]:
    """(``line N`` label, line) of every non-blank line of ``path`` (1-based numbers, blanks counted;
    lines of ``json_records.text_lines``)."""
    text = read_text(existing_file(path))
    return [(f"line {number}", line) for number, line in enumerate(text_lines(text), start=1) if line.strip()]


ASCII_INTEGER = re.compile(r"-?[0-9]+")
"""How a grade is written in a qrels file: an optional minus and ASCII digits, nothing else
(trec_eval's ``atoi`` reads ``1_0`` as 1 and ``\u0663`` as 0, Python's ``int`` as 10 and 3)."""


def grade(path: str | Path, label: str, value: str | int) -> int:
    """A relevance grade read from a qrels file (``value`` a string) or a qrels record (an int):
    an integer written as ``ASCII_INTEGER`` within +-``GRADE_BOUND``. InputError naming ``path``
    and ``label`` otherwise (``1_0``, a digit of another script, ``2.0``, ``+1``, a boolean, 2000)."""
    if isinstance(value, str) and ASCII_INTEGER.fullmatch(value):
        number = int(value) if len(value) <= 12 else GRADE_BOUND + 1
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        written = " written in ASCII digits (an optional '-' then 0-9)" if isinstance(value, str) else ""
        raise InputError(path, label, f"relevance {value!r} must be an integer{written}")
    if abs(number) > GRADE_BOUND:
        raise InputError(path, label, f"relevance {value!r} is outside [-{GRADE_BOUND}, {GRADE_BOUND}], "
                                      "the bound of a grade (nDCG's gain 2^grade - 1 must stay finite)")
    return number


def jsonl_texts(path: Path, id_key: str, with_title: bool) -> dict[str, str]:
    """{id: text} of a JSON-lines file of records ``id_key`` + ``text`` (+ optional ``title``)."""
    source = existing_file(path)
    ids, labels, texts = [], [], []
    for record in iter_json_lines(source, text_lines(read_text(source))):
        ids.append(required_id(source, record, id_key))
        labels.append(record.label)
        text = required_string(source, record, "text")
        title = record.data.get("title") if with_title else None
        if title is not None and not isinstance(title, str):
            raise InputError(source, record.label, "'title' must be a string")
        texts.append(joined_text(title, text))
    return unique_texts(source, ids, labels, texts)


def joined_text(title: str | None, text: str) -> str:
    """A document's text: its stripped title and its text joined by a newline; the text alone without a (non-blank) title."""
    return f"{title.strip()}\n{text}" if title and title.strip() else text


def tsv_texts(path: Path) -> dict[str, str]:
    """{id: text} of a headerless ``id<TAB>text`` file; InputError for a line without both fields."""
    ids, labels, texts = [], [], []
    for label, line in lines_of(path):
        record_id, tab, text = line.partition("\t")
        if not tab or not record_id.strip() or not text.strip():
            raise InputError(path, label, "expected 'id<TAB>text' with a non-blank id and text")
        ids.append(record_id.strip())
        labels.append(label)
        texts.append(text)
    return unique_texts(path, ids, labels, texts)


def unique_texts(path: str | Path, ids: list[str], labels: list[str], texts: list[str]) -> dict[str, str]:
    """{id: text}; InputError at the first repeated id, or when the file holds no record."""
    if not ids:
        raise InputError(path, "file", "no records (expected at least one)")
    check_unique(path, ids, labels, "id")
    return dict(zip(ids, texts, strict=True))


def beir_judgements(path: Path) -> list[Judgement]:
    """Judgements of a BEIR qrels file: header ``query-id corpus-id score``, then three tab-separated fields."""
    lines = lines_of(path)
    if not lines or tuple(field.strip() for field in lines[0][1].split("\t")) != BEIR_HEADER:
        raise InputError(path, "line 1", "expected the header 'query-id<TAB>corpus-id<TAB>score'")
    judgements = []
    for label, line in lines[1:]:
        fields = [field.strip() for field in line.split("\t")]
        if len(fields) != 3 or not all(fields):
            raise InputError(path, label, "expected 3 tab-separated fields: query-id, corpus-id, score")
        judgements.append((fields[0], fields[1], grade(path, label, fields[2]), label))
    return judgements


def trec_judgements(path: Path) -> list[Judgement]:
    """Judgements of a TREC qrels file: ``qid iter docno rel`` lines, white space separated."""
    judgements = []
    for label, line in lines_of(path):
        fields = line.split()
        if len(fields) != 4:
            raise InputError(path, label, "expected 4 fields: qid iter docno rel")
        judgements.append((fields[0], fields[2], grade(path, label, fields[3]), label))
    return judgements


def check_judgements(path: str | Path, judgements: list[Judgement], queries: dict, documents: dict) -> None:
    """InputError for a qrels file without judgements, a repeated (query, document) pair, or an id
    absent from the queries or the documents (naming the qrels line)."""
    if not judgements:
        raise InputError(path, "file", "no judgements")
    check_unique(path, [f"{q} {d}" for q, d, _, _ in judgements], [label for *_, label in judgements], "judgement")
    for query_id, document_id, _, label in judgements:
        if query_id not in queries:
            raise InputError(path, label, f"query id {query_id!r} is not in the queries")
        if document_id not in documents:
            raise InputError(path, label, f"document id {document_id!r} is not in the corpus")


def beir_answers(path: Path) -> dict[str, list[str]]:
    """{query id: gold answers} of a BEIR queries file: ``metadata.answers`` (a list of strings) or
    ``metadata.answer`` (one string, as BEIR's HotpotQA has it); queries without them are left out.
    InputError naming the record for answers of another type."""
    source = existing_file(path)
    answers = {}
    for record in iter_json_lines(source, text_lines(read_text(source))):
        metadata = record.data.get("metadata")
        if not isinstance(metadata, dict):
            continue
        given = metadata.get("answers", metadata.get("answer"))
        if given is None:
            continue
        given = [given] if isinstance(given, str) else given
        if not isinstance(given, list) or not all(isinstance(a, str) for a in given):
            raise InputError(source, record.label, "'metadata.answers' must be a list of strings")
        answers[str(record.data["_id"])] = [a for a in given if a.strip()]
    return answers


def texts_table(
    path: str | Path, subset: str, judgements: list[Judgement], queries: dict[str, str], documents: dict[str, str],
    answers: dict[str, list[str]] | None = None,
) -> tuple[pl.DataFrame, dict]:
    """The texts table (COLUMNS) of checked judgements, with each query's gold ``answers`` (empty
    without), and the notes (queries without judgements)."""
    check_judgements(path, judgements, queries, documents)
    frame = pl.DataFrame(
        {
            "source_id": [q for q, _, _, _ in judgements],
            "doc_id": [d for _, d, _, _ in judgements],
            "doc": [documents[d] for _, d, _, _ in judgements],
            "grade": [g for _, _, g, _ in judgements],
        },
        schema={"source_id": pl.String, "doc_id": pl.String, "doc": pl.String, "grade": pl.Int64},
    ).with_row_index("order")
    positives = (
        frame.filter(pl.col("grade") > 0)
        .sort(["grade", "order"], descending=[True, False])
        .group_by("source_id", maintain_order=True)
        .agg(p=pl.col("doc"), p_grade=pl.col("grade"), p_doc=pl.col("doc_id"))
    )
    negatives = frame.filter(pl.col("grade") <= 0).group_by("source_id", maintain_order=True).agg(
        n=pl.col("doc"), n_doc=pl.col("doc_id")
    )
    gold = answers or {}
    order = pl.DataFrame(
        {"source_id": list(queries), "q": list(queries.values()), "answers": [gold.get(q, []) for q in queries]},
        schema={"source_id": pl.String, "q": pl.String, "answers": pl.List(pl.String)},
    ).with_row_index("position")
    judged = order.join(frame.select("source_id").unique(), on="source_id", how="semi")
    table = (
        judged.join(positives, on="source_id", how="left")
        .join(negatives, on="source_id", how="left")
        .sort("position")
        .with_columns(
            id=pl.lit(f"{subset}-") + pl.col("position").cast(pl.String),
            subset=pl.lit(subset),
            p=pl.col("p").fill_null([]),
            n=pl.col("n").fill_null([]),
            p_grade=pl.col("p_grade").fill_null([]),
            p_doc=pl.col("p_doc").fill_null([]),
            n_doc=pl.col("n_doc").fill_null([]),
        )
        .select(COLUMNS)
        .cast(SCHEMA)
    )
    return table, {"queries_without_judgements": order.height - judged.height}


def beir_qrels(path: str | Path, split: str | None = None) -> Path:
    """The qrels file of a ``beir`` dataset named by ``path``: ``path`` itself when it is a file (then
    ``split`` must be None), else ``<path>/qrels/<split>.tsv`` of the BEIR folder ``path`` (split
    default ``BEIR_SPLIT``). InputError naming the folder and what it lacks (the qrels folder, or
    the split's file and the splits it holds), or the file that is not found."""
    source = Path(path)
    if not source.is_dir():
        if split is not None:
            raise InputError(source, "file", f"split {split!r} applies to a BEIR folder; this path is a qrels file")
        return existing_file(source)
    split = BEIR_SPLIT if split is None else split
    if not (source / "qrels").is_dir():
        raise InputError(source, "folder", f"a BEIR folder holds qrels/{split}.tsv, corpus.jsonl and queries.jsonl; "
                         "it has no qrels folder")
    qrels = source / "qrels" / f"{split}.tsv"
    if not qrels.is_file():
        found = sorted(p.stem for p in (source / "qrels").glob("*.tsv") if p.is_file())
        held = f"its qrels splits: {', '.join(found)}" if found else "its qrels folder holds no .tsv file"
        raise InputError(source, "folder", f"no qrels/{split}.tsv for split {split!r} ({held})")
    return qrels


def read_beir(path: str | Path, level: str | None, subset: str | None = None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset ``subset``, default B) of the BEIR dataset ``path``: its qrels file, or its
    folder (split ``BEIR_SPLIT``; :func:`beir_qrels`); ``level`` is unused."""
    qrels = beir_qrels(path)
    folder = qrels.parent.parent
    documents = jsonl_texts(folder / "corpus.jsonl", "_id", with_title=True)
    queries = jsonl_texts(folder / "queries.jsonl", "_id", with_title=False)
    return texts_table(qrels, subset or BEIR_SUBSET, beir_judgements(qrels), queries, documents,
                       beir_answers(folder / "queries.jsonl"))


def companion(qrels: Path, stem: str) -> tuple[Path, str]:
    """(path, format) of ``<stem>.jsonl`` or ``<stem>.tsv`` beside ``qrels``; InputError unless exactly one exists."""
    candidates = [(qrels.parent / f"{stem}.{suffix}", suffix) for suffix in ("jsonl", "tsv")]
    found = [(path, suffix) for path, suffix in candidates if path.is_file()]
    if len(found) != 1:
        rule = f"expected exactly one of {stem}.jsonl or {stem}.tsv beside the qrels file, found {len(found)}"
        raise InputError(qrels, "file", rule)
    return found[0]


def companion_texts(qrels: Path, stem: str) -> dict[str, str]:
    """{id: text} of the ``stem`` documents or queries beside a TREC qrels file."""
    path, suffix = companion(qrels, stem)
    return jsonl_texts(path, "id", with_title=False) if suffix == "jsonl" else tsv_texts(path)


def read_trec(path: str | Path, level: str | None, subset: str | None = None) -> tuple[pl.DataFrame, dict]:
    """Texts table (subset ``subset``, default T) of a TREC qrels file ``path`` and its documents and
    queries; ``level`` is unused."""
    qrels = existing_file(path)
    documents = companion_texts(qrels, "documents")
    queries = companion_texts(qrels, "queries")
    return texts_table(qrels, subset or TREC_SUBSET, trec_judgements(qrels), queries, documents)


def source_files(layout: str, path: str | Path) -> list[str]:
    """Every file a dataset of ``layout`` named by ``path`` is read from, for a rule's inputs: the
    qrels file of a ``beir`` or ``trec`` dataset (``path``, a BEIR folder already resolved to its
    qrels file by ``plan.resolve_beir_folders``), then its corpus and queries: ``corpus.jsonl``
    and ``queries.jsonl`` of the BEIR folder, or the ``documents`` and ``queries`` files beside the
    TREC qrels file that exist (the reader names a missing or doubled one); ``[path]`` for any
    other layout. Reads no file."""
    source = Path(path)
    if layout == "beir" and source.is_file():
        folder = source.parent.parent
        return [str(source), str(folder / "corpus.jsonl"), str(folder / "queries.jsonl")]
    if layout == "trec":
        beside = [source.parent / f"{stem}.{suffix}" for stem in ("documents", "queries") for suffix in ("jsonl", "tsv")]
        return [str(source), *(str(file) for file in beside if file.is_file())]
    return [str(source)]


def corpus_file(layout: str, path: str | Path) -> Path | None:
    """The documents file of a ``beir`` (its folder or qrels file ``path``) or ``trec`` dataset
    (``documents.jsonl`` or ``documents.tsv`` beside the qrels file); None when it cannot be told
    (no such file, or both), which the reader reports. Reads no file."""
    source = Path(path)
    if layout == "beir":
        folder = source if source.is_dir() else source.parent.parent
        return folder / "corpus.jsonl" if (folder / "corpus.jsonl").is_file() else None
    found = [source.parent / f"documents.{suffix}" for suffix in ("jsonl", "tsv")
             if (source.parent / f"documents.{suffix}").is_file()]
    return found[0] if layout == "trec" and len(found) == 1 else None


def has_records(path: Path, count: int) -> int:
    """The number of non-blank lines of ``path`` (JSON lines or TSV records), counted up to ``count``
    only: a start-up check reads a corpus's first records, not the whole file."""
    seen, tail = 0, b""
    with path.open("rb") as handle:
        while seen < count and (block := handle.read(1 << 16)):
            lines = (tail + block).split(b"\n")
            tail = lines.pop()
            seen += sum(1 for line in lines if line.strip())
        if seen < count and tail.strip():
            seen += 1
    return min(seen, count)


def judged_texts(layout: str, path: str | Path, kind: str) -> dict[str, str]:
    """{id: text} of the ``documents`` or the ``queries`` (``kind``) of the ``beir`` or ``trec``
    dataset whose qrels file is ``path`` (a BEIR document's title and text joined as in the texts
    table). ValueError for another layout."""
    qrels = beir_qrels(path) if layout == "beir" else existing_file(path)
    if layout == "beir":
        name = "corpus.jsonl" if kind == "documents" else "queries.jsonl"
        return jsonl_texts(qrels.parent.parent / name, "_id", with_title=kind == "documents")
    if layout == "trec":
        return companion_texts(qrels, kind)
    raise ValueError(f"layout {layout!r} has no document ids in files; a corpus or a run needs 'beir', 'trec' or 'ir_datasets'")
