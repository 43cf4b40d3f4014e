"""TREC run files: your own retriever's ranking of a judged corpus, read as ranked samples and written back.

A run file holds one run: lines ``qid Q0 docid rank score tag`` (the second field is not read,
as in trec_eval). A line holding a tab is split at its tabs, each field stripped of surrounding
white space, so ids may hold spaces; any other line is split at runs of white space, as
trec_eval splits it. :func:`write_run` writes tab-separated lines and refuses, in one line, an id
that could not be read back as written: empty, starting or ending with white space, or holding a
tab or a line break (``str.splitlines``). On a dataset of a layout with document ids
(``beir``, ``trec``) the run *is* the ranking: for a design (Nc, Np) each query's candidates
(its first Np positives and first Nc - Np negatives, by document id) are ordered by the run's
score, highest first, ties broken by the run's rank column (lower first), then by the run's own
line order. Candidates the run does not rank follow all ranked ones, ordered by
``cosine_ranking.tie_keys`` (a hash of their texts), and are counted in the report as
``candidates_not_in_run``. No tie is ever broken by candidate order, which lists the positives
first; a query the run does not rank at all is skipped (``not_in_run``).
Documents the run ranks that are not candidates of the query are ignored.

Every bad record is one InputError naming the file, the line and the rule (the first one
stops the reading): not six fields, an empty qid or docid, a rank that is not an integer >= 1, a score that is not a
finite number, a repeated (qid, docid) pair, a tag different from the first line's, a document
not in the corpus, a query not in the queries.
"""

from __future__ import annotations

import os

import polars as pl

from retrieval_response.infra.atomic import write_text
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import existing_file, read_text, text_lines
from retrieval_response.ranking.cosine_ranking import RankingReport, design_ks, ranked_table, select_serving, tie_keys

RUN_SCHEMA = {"qid": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64, "tag": pl.String,
              "line": pl.Int64}
NOT_IN_RUN = "not_in_run"
"""Skip reason of a query the run does not rank."""


def _fail_at_first(path: os.PathLike, frame: pl.DataFrame, bad: pl.Expr, rule: pl.Expr | str) -> None:
    """InputError ``(path, "line N", rule)`` for the first row of ``frame`` where ``bad`` holds."""
    hits = frame.filter(bad.fill_null(True))
    if hits.height:
        first = hits.row(0, named=True)
        text = hits.head(1).select(rule).item() if isinstance(rule, pl.Expr) else rule
        raise InputError(path, f"line {first['line']}", text)


def _fields(text: pl.Expr) -> pl.Expr:
    """The fields of run lines ``text`` (module docstring): split at tabs where a line holds one,
    else at runs of white space; a blank line has none."""
    return (pl.when(text.str.contains("\t", literal=True))
            .then(text.str.split("\t").list.eval(pl.element().str.strip_chars()))
            .otherwise(text.str.extract_all(r"\S+")))


def read_run(path: str | os.PathLike, *, documents: pl.Series | None = None,
             queries: pl.Series | None = None) -> pl.DataFrame:
    """The lines of the run file ``path`` as a table (``RUN_SCHEMA``: qid, docid, rank, score, tag, line).

    ``line`` is the 1-based line number (blank lines counted, not read). ``documents`` and
    ``queries``, when given, are the ids a docid and a qid must belong to. InputError for the
    first bad record (module docstring) or a file without any line.
    """
    source = existing_file(path)
    lines = pl.DataFrame({"text": text_lines(read_text(source))}, schema={"text": pl.String})
    lines = lines.with_row_index("line", offset=1).with_columns(pl.col("line").cast(pl.Int64))
    lines = lines.with_columns(fields=_fields(pl.col("text"))).filter(
        pl.col("fields").list.len() > 0, pl.col("text").str.strip_chars() != "")
    if lines.height == 0:
        raise InputError(source, "file", "no run lines (expected 'qid Q0 docid rank score tag' lines)")
    _fail_at_first(source, lines, pl.col("fields").list.len() != 6,
                   "expected 6 fields: qid Q0 docid rank score tag")
    field = pl.col("fields").list.get
    run = lines.select(
        "line",
        qid=field(0), docid=field(2), rank_text=field(3), score_text=field(4), tag=field(5),
        rank=field(3).cast(pl.Int64, strict=False),
        score=field(4).cast(pl.Float64, strict=False),
    )
    _fail_at_first(source, run, (pl.col("qid") == "") | (pl.col("docid") == ""), "empty query or document id")
    _fail_at_first(source, run, pl.col("rank").is_null() | (pl.col("rank") < 1),
                   pl.format("rank '{}' must be an integer >= 1", "rank_text"))
    _fail_at_first(source, run, ~pl.col("score").is_finite(),
                   pl.format("score '{}' must be a finite number", "score_text"))
    first_tag = run["tag"][0]
    _fail_at_first(source, run, pl.col("tag") != first_tag,
                   pl.format(f"tag '{{}}' differs from the first line's '{first_tag}': a run file holds one run",
                             "tag"))
    run = run.with_columns(first_line=pl.col("line").min().over("qid", "docid"))
    _fail_at_first(source, run, pl.col("line") != pl.col("first_line"),
                   pl.format("document '{}' repeated for query '{}' (first on line {})", "docid", "qid",
                             "first_line"))
    if documents is not None:
        _fail_at_first(source, run, ~pl.col("docid").is_in(documents.implode()),
                       pl.format("document '{}' is not in the corpus", "docid"))
    if queries is not None:
        _fail_at_first(source, run, ~pl.col("qid").is_in(queries.implode()),
                       pl.format("query '{}' is not in the queries", "qid"))
    return run.select(*RUN_SCHEMA).cast(RUN_SCHEMA)


def run_tag(path: str | os.PathLike) -> str:
    """The tag (last field) of the first non-blank line of the run file ``path``, its fields split as
    :func:`read_run` splits them; InputError when that line does not have 6 fields or the file has
    no line."""
    source = existing_file(path)
    with source.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                fields = pl.select(_fields(pl.lit(line.rstrip("\r\n")))).item().to_list()
                if len(fields) != 6:
                    raise InputError(source, f"line {number}", "expected 6 fields: qid Q0 docid rank score tag")
                return fields[5]
    raise InputError(source, "file", "no run lines (expected 'qid Q0 docid rank score tag' lines)")


def candidate_documents(serving: pl.DataFrame, Nc: int, Np: int) -> pl.DataFrame:
    """Long table ``row, source_id, docid, candidate, tie``: the candidate documents of each serving
    query (first Np of ``p_doc`` then first Nc - Np of ``n_doc``), ``candidate`` their index
    0..Nc-1, ``tie`` the ``cosine_ranking.tie_keys`` of their texts (``p``, ``n``)."""
    docs = serving.select(
        pl.col("source_id"), docid=pl.concat_list(pl.col("p_doc").list.head(Np), pl.col("n_doc").list.head(Nc - Np)),
        text=pl.concat_list(pl.col("p").list.head(Np), pl.col("n").list.head(Nc - Np)),
    ).with_row_index("row")
    docs = docs.explode("docid", "text").with_columns(candidate=pl.int_range(pl.len()).over("row").cast(pl.Int32))
    return docs.with_columns(tie=pl.Series(tie_keys(docs["text"].to_list()), dtype=pl.UInt64)).drop("text")


def run_rank_samples(
    texts: pl.DataFrame, run: pl.DataFrame, *, ranker_code: str, Nc: int, Np: int, Ks: list[int]
) -> tuple[pl.DataFrame, RankingReport]:
    """Ranked samples of design (Nc, Np) ordered by ``run`` (``read_run``), in the ranked layout.

    ``texts`` needs ``id, subset, source_id, p, n, p_doc, n_doc`` (the ``beir`` and ``trec``
    layouts). A query is matched to the run by its ``source_id``. The report's ``skipped`` adds
    ``not_in_run``, and its dict form ``candidates_not_in_run``. ValueError on a bad design or K,
    or on texts without document ids.
    """
    missing = {"source_id", "p_doc", "n_doc"} - set(texts.columns)
    if missing:
        raise ValueError(f"a run ranks documents by id: the texts table lacks {sorted(missing)}")
    Ks = design_ks(Ks, Nc, Np)
    serving, report = select_serving(texts, Nc, Np)
    in_run = serving["source_id"].is_in(run["qid"].unique().implode())
    report.skipped[NOT_IN_RUN] = int((~in_run).sum())
    serving = serving.filter(in_run)
    report.ranked = serving.height
    ordered = (
        candidate_documents(serving, Nc, Np)
        .join(run.select("qid", "docid", "rank", "score", "line"), left_on=["source_id", "docid"],
              right_on=["qid", "docid"], how="left")
        .sort(["row", "score", "rank", "line", "tie", "candidate"], descending=[False, True, False, False, False, False],
              nulls_last=True)
    )
    report.notes["candidates_not_in_run"] = int(ordered["score"].null_count())
    rank = ordered["candidate"].to_numpy().reshape(serving.height, Nc)
    return ranked_table(serving, rank, ranker_code=ranker_code, Np=Np, Ks=Ks), report


def unwritable_id(value: str) -> str | None:
    """Why the id ``value`` cannot be written to a run file and read back as itself (module
    docstring), or None when it can."""
    if value == "":
        return "is empty"
    if value != value.strip():
        return "starts or ends with white space"
    if "\t" in value:
        return "holds a tab"
    if value.splitlines() != [value]:
        return "holds a line break"
    return None


def run_lines(ranked: pl.DataFrame, texts: pl.DataFrame, *, tag: str) -> str:
    """The TREC run text of a ranked table of one ranking: per sample, its ranked candidates (the
    retrieved ones of a corpus-level ranking) by document id in ranked order, tab-separated, ranks
    1..n and scores n..1 (so reading it back gives the same order).

    ``texts`` is the unit's texts table (``id, source_id, p_doc, n_doc``). A ranking is one (E, Nc,
    Np) design, or the samples of one corpus-level ranker (one per query, Nc and Np per query).
    ValueError when ``ranked`` holds two samples of one query, a sample is not in ``texts``, the
    tag is empty or holds white space, or a written id could not be read back (:func:`unwritable_id`):
    one line naming the id and the rule.
    """
    if not tag or len(tag.split()) != 1 or tag != tag.strip():
        raise ValueError(f"run tag {tag!r} must be one non-empty word without white space")
    if ranked["id"].is_duplicated().any():
        raise ValueError("a run file holds one ranking; the table has two samples of one query")
    if ranked.height == 0:
        return ""
    joined = (ranked.select("id", "Nc", "Np", "rank")
              .join(texts.select("id", "source_id", "p_doc", "n_doc"), on="id", how="left", maintain_order="left"))
    if joined["source_id"].null_count():
        raise ValueError("a ranked sample is not in the texts table")
    candidates = pl.concat_list(pl.col("p_doc").list.head(pl.col("Np")), pl.col("n_doc").list.head(pl.col("Nc") - pl.col("Np")))
    lines = (
        joined.select("source_id", docid=candidates.list.gather(pl.col("rank")))
        .with_columns(position=pl.int_ranges(1, pl.col("docid").list.len() + 1),
                      length=pl.col("docid").list.len())
        .explode("docid", "position")
    )
    for kind, column in (("query", "source_id"), ("document", "docid")):
        for value in lines[column].unique(maintain_order=True).to_list():
            problem = unwritable_id(value)
            if problem:
                raise ValueError(f"{kind} id {value!r} {problem}: a run file cannot hold it and read it back")
    text = lines.select(pl.format("{}\tQ0\t{}\t{}\t{}\t{}", "source_id", "docid", "position",
                                  pl.col("length") + 1 - pl.col("position"), pl.lit(tag))).to_series()
    return "\n".join(text.to_list()) + "\n"


def write_run(ranked: pl.DataFrame, texts: pl.DataFrame, path: str | os.PathLike, *, tag: str) -> None:
    """Write ``run_lines(ranked, texts, tag=tag)`` to ``path`` atomically (nothing written when it
    raises ValueError)."""
    write_text(run_lines(ranked, texts, tag=tag), path)


def check_run_matches(run: pl.DataFrame, source_ids: pl.Series, path: str | os.PathLike) -> None:
    """InputError naming the run file ``path`` when none of the query ids of ``run`` (``read_run``)
    is among ``source_ids``, the source ids of the dataset's prepared queries: every query would be
    skipped as ``not_in_run``, and the analysis would find no sample after the LLM calls were paid.
    Raised by the ranking job, which every LLM job waits for."""
    ranked = run["qid"].unique(maintain_order=True)
    if source_ids.len() and not source_ids.is_in(ranked.implode()).any():
        raise InputError(path, "file", f"none of its {ranked.len()} query ids (first {ranked[0]!r}) is one of the "
                         f"{source_ids.len()} prepared queries of the dataset (first {source_ids[0]!r}): the run "
                         "ranks other queries, so every query would be skipped; nothing is sent to an LLM")


def checked_run(texts: pl.DataFrame, run_path: str | os.PathLike, *, documents: pl.Series | None,
                queries: pl.Series | None) -> pl.DataFrame:
    """``read_run`` of ``run_path`` checked against ``documents`` and ``queries``, then by
    :func:`check_run_matches` against the queries of ``texts``."""
    run = read_run(run_path, documents=documents, queries=queries)
    check_run_matches(run, texts["source_id"], run_path)
    return run


def rank_from_run(texts: pl.DataFrame, run_path: str | os.PathLike, *, documents: pl.Series,
                  queries: pl.Series, ranker_code: str, Nc: int, Np: int,
                  Ks: list[int]) -> tuple[pl.DataFrame, RankingReport]:
    """:func:`checked_run`, then ``run_rank_samples``."""
    run = checked_run(texts, run_path, documents=documents, queries=queries)
    return run_rank_samples(texts, run, ranker_code=ranker_code, Nc=Nc, Np=Np, Ks=Ks)

