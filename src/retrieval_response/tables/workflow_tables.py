"""The workflow's own Parquet tables read back by a later stage, checked before use.

A table edited by hand (or truncated, or from another version) must fail with one line
``<file>: id <id>: <rule>`` (``(and N more rows)`` when several rows break the rule), never with a
polars traceback naming no file. The rules are those the writers guarantee (docs/DESIGN.md):

- ranked (:func:`validate_ranked`, checked by its writers and by :func:`read_ranked_table`):
  ``2 <= Nc <= MAX_NC``, ``1 <= Np < Nc``; ``rank`` a permutation of ``0..Nc-1`` and ``K``
  increasing in ``1..Nc``, or, in a corpus-level ranking (column ``judged``), ``rank`` distinct
  values of ``0..Nc-1`` holding every index >= Np (the positives not retrieved have no position)
  and ``K`` increasing from 1 up; ``P``, ``R`` as long as ``K`` and equal to n_p/K and n_p/Np,
  n_p the positives (``rank < Np``) in ``rank[:K]`` (the whole rank when it is shorter);
  (id, E, Nc, Np) unique;
- graded and analysis tables (:func:`sample_rules`): the same bounds, ``K >= 1``; ``rank`` K
  distinct values in ``0..Nc-1`` (so ``K <= Nc``), or fewer than K when the ranker retrieved no
  more (a short corpus-level retrieval: then ``rank`` holds every index >= Np);
  ``inK = (rank < Np)``, a grade in 1..5 or null; the graded table (:func:`validate_graded`,
  checked by its writers and by :func:`read_graded_table`) also a status on every row,
  ``"graded"`` exactly when the grade is given, (id, E, Nc, Np, K) unique and, with any gold
  column, all of them under the same two rules; in the analysis table ``np_2K`` (positives in
  the top 2K) at least ``sum(inK)`` (positives in the top K);
- texts (:func:`read_texts_table`): unique ids; each ranked id of a design has ``Np`` positives
  and ``Nc - Np`` negatives to rank (:func:`check_candidates`);
- judgments (:func:`read_judgments_table`): ``id`` and ``text`` given, (id, text) unique, an
  UMBRELA label in 0..3 and a NO-RESPONSE probability in [0, 1] where given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import polars as pl

from retrieval_response.analysis.ranked_lists import flatten, precision, recall
from retrieval_response.infra.errors import InputError
from retrieval_response.tables.graded import GOLD_COLUMNS, GRADED_COLUMNS
from retrieval_response.tables.published import MAX_NC

RANKED_COLUMNS = ("id", "subset", "E", "Nc", "Np", "K", "P", "R", "rank")
RANKED_RULE_COLUMNS = ("id", "E", "Nc", "Np", "K", "P", "R", "rank")
"""The columns the ranked-table rules read."""
SAMPLE_COLUMNS = ("id", "E", "Nc", "Np", "K", "rank", "inK", "grade")
TEXTS_COLUMNS = ("id", "q", "p", "n")
PRECISION_TOLERANCE = 1e-9
"""How far a ranked table's P and R may lie from n_p/K and n_p/Np (rounding of another writer)."""

_nc, _np, _k, _rank = pl.col("Nc"), pl.col("Np"), pl.col("K"), pl.col("rank")
COUNT_RULES = {
    f"Nc must lie in 2..{MAX_NC}": ~_nc.is_between(2, MAX_NC),
    "need 1 <= Np < Nc": ~((_np >= 1) & (_np < _nc)),
}


def read_table(path: str | os.PathLike, columns: Sequence[str], what: str, *, all_columns: bool = False) -> pl.DataFrame:
    """The Parquet table at ``path``: ``columns`` (all required), or every column when
    ``all_columns``; InputError when it cannot be read or lacks a column."""
    try:
        schema = pl.read_parquet_schema(path)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise InputError(path, "file", f"cannot read as a Parquet {what} table: {error}") from None
    missing = [c for c in columns if c not in schema]
    if missing:
        raise InputError(path, "columns", f"missing column {missing[0]!r} of a {what} table")
    try:
        return pl.read_parquet(path, columns=None if all_columns else list(columns))
    except (OSError, pl.exceptions.PolarsError) as error:
        raise InputError(path, "file", f"cannot read as a Parquet {what} table: {error}") from None


def check_rules(frame: pl.DataFrame, path: str | os.PathLike, rules: dict[str, pl.Expr]) -> None:
    """InputError ``<path>: id <first id>: <rule>`` for the first rule some row breaks (a null
    counts as broken), with the number of other rows that break it."""
    for rule, broken in rules.items():
        offenders = frame.filter(broken.fill_null(True))
        if offenders.height:
            more = f" (and {offenders.height - 1} more rows)" if offenders.height > 1 else ""
            raise InputError(path, f"id {offenders['id'][0]}", f"{rule}{more}")


def is_corpus_ranking(columns: list[str] | pl.Schema) -> bool:
    """True for the columns of the ranked layout of a corpus-level ranker (``judged``, as in
    ``corpus_retrieval.CORPUS_RANKED_SCHEMA``): its ``rank`` lists the retrieved documents only, so
    it may be shorter than Nc and than K, and its K are not bounded by Nc."""
    return "judged" in columns


def retrieved_rank_holds_every_other() -> pl.Expr:
    """True where ``rank`` holds every candidate index in Np..Nc-1: a corpus-level ranking lists
    every document it retrieved, and only the positives it did not retrieve have no position."""
    others = pl.int_ranges("Np", "Nc", dtype=pl.Int32)
    return pl.col("rank").cast(pl.List(pl.Int32)).list.set_intersection(others).list.len() == pl.col("Nc") - pl.col("Np")


def _rank_value_rules() -> dict[str, pl.Expr]:
    """``rank`` holds distinct values in 0..Nc-1."""
    return {
        "rank values must lie in 0..Nc-1": (_rank.list.min() < 0) | (_rank.list.max() >= _nc),
        "rank must not repeat a candidate": _rank.list.n_unique() != _rank.list.len(),
    }


def _check_columns(frame: pl.DataFrame, path: str | os.PathLike, columns: Sequence[str], what: str) -> None:
    """InputError ``<path>: columns: missing column ...`` when ``frame`` lacks one of ``columns``."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(path, "columns", f"missing column {missing[0]!r} of a {what} table")


def _precision_recall_match_rank(ranked: pl.DataFrame) -> pl.Series:
    """Per row: every P and R within PRECISION_TOLERANCE of n_p/K and n_p/Np, n_p = #(rank[:K] < Np)
    (the whole rank when it is shorter than K). Needs the structural ranked rules to hold."""
    relevant, owner, _ = flatten(ranked["rank"])
    Np = ranked["Np"].to_numpy().astype(np.int64)
    hits = np.concatenate([[0], np.cumsum(relevant < Np[owner])])
    length = ranked["rank"].list.len().to_numpy().astype(np.int64)
    start = np.concatenate([[0], np.cumsum(length)])
    K, row, _ = flatten(ranked["K"])
    n_p = hits[start[row] + np.minimum(K.astype(np.int64), length[row])] - hits[start[row]]
    stored_p, stored_r = flatten(ranked["P"])[0], flatten(ranked["R"])[0]
    close = ((np.abs(stored_p - precision(n_p, K)) <= PRECISION_TOLERANCE)
             & (np.abs(stored_r - recall(n_p, Np[row])) <= PRECISION_TOLERANCE))
    return pl.Series(np.bincount(row, weights=~close, minlength=ranked.height) == 0)


def validate_ranked(ranked: pl.DataFrame, path: str | os.PathLike, *, corpus: bool | None = None) -> None:
    """The ranked-table rules (module docstring); InputError at the first rule broken. ``corpus``:
    the table is a corpus-level ranking (default: it has the column ``judged``)."""
    _check_columns(ranked, path, RANKED_RULE_COLUMNS, "ranked")
    corpus = is_corpus_ranking(ranked.columns) if corpus is None else corpus
    if corpus:
        shape = {
            "rank must hold every retrieved candidate (every index >= Np)": ~retrieved_rank_holds_every_other(),
            "K must be increasing values >= 1": (_k.list.len() == 0) | (_k.list.min() < 1)
            | (_k.list.diff(null_behavior="drop").list.min().fill_null(1) <= 0),
        }
    else:
        shape = {
            "len(rank) is wrong (Nc in a ranked table, K in a graded one)": _rank.list.len() != _nc,
            "K must be increasing values in 1..Nc": (_k.list.len() == 0) | (_k.list.min() < 1) | (_k.list.max() > _nc)
            | (_k.list.diff(null_behavior="drop").list.min().fill_null(1) <= 0),
        }
    rules = {
        "id must not be null": pl.col("id").is_null(),
        **COUNT_RULES,
        **_rank_value_rules(),
        **shape,
        "P and R must be as long as K": (pl.col("P").list.len() != _k.list.len()) | (pl.col("R").list.len() != _k.list.len()),
        "duplicate (id, E, Nc, Np)": pl.struct("id", "E", "Nc", "Np").is_duplicated(),
    }
    check_rules(ranked, path, rules)
    check_rules(ranked, path, {"P and R must equal n_p/K and n_p/Np, n_p the positives (rank < Np) in rank[:K]":
                               ~pl.lit(_precision_recall_match_rank(ranked))})


def read_ranked_table(path: str | os.PathLike, columns: Sequence[str] = RANKED_COLUMNS) -> pl.DataFrame:
    """A ranked table, checked (``validate_ranked`` on the columns it needs), with ``columns`` only."""
    needed = dict.fromkeys([*columns, *RANKED_RULE_COLUMNS])
    ranked = read_table(path, list(needed), "ranked")
    validate_ranked(ranked, path, corpus=is_corpus_ranking(pl.read_parquet_schema(path)))
    return ranked.select(columns)


def _ink_matches_rank(frame: pl.DataFrame) -> pl.Series:
    """Per row: ``inK`` is ``rank < Np`` element by element (rows whose lists differ in length: False)."""
    same_length = frame["inK"].list.len() == frame["rank"].list.len()
    rows = (frame.select(pl.col("rank").cast(pl.List(pl.Int64)), pl.col("inK").cast(pl.List(pl.Int64)),
                         pl.col("Np").cast(pl.Int64))
            .with_row_index("row")
            .filter(same_length)
            .explode("rank", "inK")
            .group_by("row")
            .agg(ok=(pl.col("inK") == (pl.col("rank") < pl.col("Np")).cast(pl.Int64)).all()))
    matches = pl.DataFrame({"row": pl.arange(0, frame.height, eager=True).cast(pl.UInt32)}).join(
        rows, on="row", how="left", maintain_order="left")["ok"]
    return matches.fill_null(False) & same_length


def sample_rules(frame: pl.DataFrame) -> dict[str, pl.Expr]:
    """Rules every graded sample of ``frame`` obeys (graded and analysis tables)."""
    short = _rank.list.len() < _k
    return {
        "id must not be null": pl.col("id").is_null(),
        **COUNT_RULES,
        "K must be >= 1": _k < 1,
        **_rank_value_rules(),
        "len(rank) must lie in 1..K": (_rank.list.len() < 1) | (_rank.list.len() > _k),
        "a top K shorter than K must hold every index >= Np (a ranker that retrieved no more)":
            short & ~retrieved_rank_holds_every_other(),
        "len(inK) != len(rank)": pl.col("inK").list.len() != _rank.list.len(),
        "inK must be 1 exactly where rank < Np": ~pl.lit(_ink_matches_rank(frame)),
        "grade outside 1..5": pl.col("grade").is_not_null() & ~pl.col("grade").is_between(1, 5),
    }


def validate_samples(frame: pl.DataFrame, path: str | os.PathLike) -> None:
    """``sample_rules``; InputError at the first rule broken."""
    check_rules(frame, path, sample_rules(frame))


def validate_graded(graded: pl.DataFrame, path: str | os.PathLike) -> None:
    """The graded-table rules (module docstring, docs/METHODS.md#graded-table): every column of
    ``GRADED_COLUMNS`` and, with any of ``GOLD_COLUMNS``, all of them; ``sample_rules``; a status on
    every row, a grade exactly when the status is ``"graded"`` (and the same two rules for
    ``status_gold`` and ``grade_gold``); (id, E, Nc, Np, K) unique; InputError at the first rule
    broken."""
    gold = any(c in graded.columns for c in GOLD_COLUMNS)
    _check_columns(graded, path, (*GRADED_COLUMNS, *(GOLD_COLUMNS if gold else ())), "graded")
    rules = {
        **sample_rules(graded),
        "status is null": pl.col("status").is_null(),
        "grade present exactly when status is 'graded'": pl.col("grade").is_not_null() != (pl.col("status") == "graded"),
        "duplicate (id, E, Nc, Np, K)": pl.struct("id", "E", "Nc", "Np", "K").is_duplicated(),
    }
    if gold:
        rules |= {
            "status_gold is null": pl.col("status_gold").is_null(),
            "grade_gold outside 1..5": pl.col("grade_gold").is_not_null() & ~pl.col("grade_gold").is_between(1, 5),
            "grade_gold present exactly when status_gold is 'graded'":
                pl.col("grade_gold").is_not_null() != (pl.col("status_gold") == "graded"),
        }
    check_rules(graded, path, rules)


def read_graded_table(path: str | os.PathLike) -> pl.DataFrame:
    """A graded table (an output of ``merge_graded``), checked (:func:`validate_graded`)."""
    graded = read_table(path, GRADED_COLUMNS, "graded", all_columns=True)
    validate_graded(graded, path)
    return graded


TRACE_SAMPLE_COLUMNS = ("id", "E", "Nc", "Np", "K", "rank", "inK", "record")
"""Columns of an analysis table of traces (``tables.trace_samples.collect_traces``); ``record`` marks one."""


def trace_sample_rules() -> dict[str, pl.Expr]:
    """Rules every sample of a traces analysis table obeys: ``rank`` the trace's K documents
    (distinct candidates of 0..Nc-1), ``inK`` their 0/1 relevance from the labels or qrels (not
    ``rank < Np``), ``Np`` null (unknown) or >= 0, grades in 1..5 or null."""
    grades = ("grade_context", "grade_gold")
    return {
        "id must not be null": pl.col("id").is_null(),
        "E (the system) must not be null": pl.col("E").is_null(),
        "K must be >= 1": _k < 1,
        **_rank_value_rules(),
        "len(rank) must be K (the trace's documents)": _rank.list.len() != _k,
        "len(inK) != len(rank)": pl.col("inK").list.len() != _rank.list.len(),
        "inK must hold 0 or 1": ~pl.col("inK").list.eval(pl.element().is_in([0, 1])).list.all(),
        "Np must be null (unknown) or >= 0": _np.is_not_null() & (_np < 0),
        **{f"{g} outside 1..5": pl.col(g).is_not_null() & ~pl.col(g).is_between(1, 5) for g in grades},
    }


def read_analysis_table(path: str | os.PathLike) -> pl.DataFrame:
    """The analysis table (``results/analysis/graded.parquet``), checked: its samples
    (``validate_samples``) and, where counted, ``np_2K >= sum(inK)`` (the top 2K holds the top K);
    a table of traces (column ``record``) by :func:`trace_sample_rules`."""
    traces = "record" in read_table(path, (), "analysis", all_columns=True).columns
    table = read_table(path, TRACE_SAMPLE_COLUMNS if traces else SAMPLE_COLUMNS, "analysis", all_columns=True)
    if traces:
        check_rules(table, path, {rule: expr for rule, expr in trace_sample_rules().items()
                                  if not rule.startswith("grade_") or rule.split(" ")[0] in table.columns})
        return table
    validate_samples(table, path)
    if "np_2K" in table.columns:
        check_rules(table, path, {
            "np_2K (positives in the top 2K) must lie in sum(inK)..Np": pl.col("np_2K").is_not_null()
            & ~pl.col("np_2K").is_between(pl.col("inK").list.sum(), _np),
        })
    return table


def read_texts_table(path: str | os.PathLike, columns: Sequence[str] = TEXTS_COLUMNS) -> pl.DataFrame:
    """A texts table (an output of ``prepare_dataset``) with ``columns``: ids present and unique."""
    texts = read_table(path, list(dict.fromkeys(["id", *columns])), "texts")
    check_rules(texts, path, {"id must not be null": pl.col("id").is_null(), "duplicate id": pl.col("id").is_duplicated()})
    return texts.select(columns)


JUDGMENTS_COLUMNS = ("id", "text", "erag_answer", "no_response_p", "umbrela_label")
"""Columns of a judgments table (``results/judgments/<dataset>.parquet``) the analysis reads."""


def read_judgments_table(path: str | os.PathLike) -> pl.DataFrame:
    """A judgments table (an output of ``judge_documents``) with :data:`JUDGMENTS_COLUMNS`, checked
    (module docstring); InputError naming the file, the first offending id and the rule."""
    judgments = read_table(path, JUDGMENTS_COLUMNS, "judgments")
    check_rules(judgments, path, {
        "id must not be null": pl.col("id").is_null(),
        "text must not be null": pl.col("text").is_null(),
        "duplicate (id, text)": pl.struct("id", "text").is_duplicated(),
        "umbrela_label outside 0..3": pl.col("umbrela_label").is_not_null() & ~pl.col("umbrela_label").is_between(0, 3),
        "no_response_p outside [0, 1]": pl.col("no_response_p").is_not_null() & ~pl.col("no_response_p").is_between(0, 1),
    })
    return judgments


def check_candidates(ranked: pl.DataFrame, texts: pl.DataFrame, ranked_path: str | os.PathLike,
                     texts_path: str | os.PathLike) -> None:
    """Every ranked id is a query of ``texts`` with at least Np positives and Nc - Np negatives
    (the candidates its ranking orders); InputError naming the ranked file otherwise."""
    joined = ranked.select("id", "Nc", "Np").join(
        texts.select("id", n_p=pl.col("p").list.len(), n_n=pl.col("n").list.len()), on="id", how="left")
    check_rules(joined, ranked_path, {
        f"not a query of {texts_path}": pl.col("n_p").is_null(),
        f"fewer than Np positives or Nc - Np negatives in {texts_path}":
            (pl.col("n_p") < _np) | (pl.col("n_n") < _nc - _np),
    })


def check_ids_across_datasets(texts_paths: dict[str, str | os.PathLike]) -> dict:
    """The texts tables of all datasets (name -> path) share no query id; InputError naming both
    tables, the first shared id and how many are shared otherwise. Ids are unique within a dataset
    only, while the analysis keys its samples and resamples its queries by id: two datasets with
    one id would be refused after every LLM call was paid, so the LLM rules wait for this check.
    Returns ``{"datasets": n, "queries": n}``."""
    owner: dict[str, str] = {}
    total = 0
    for name, path in sorted(texts_paths.items()):
        ids = read_texts_table(path, ["id"])["id"].to_list()
        total += len(ids)
        shared = [i for i in ids if i in owner]
        if shared:
            first = owner[shared[0]]
            more = f" ({len(shared)} ids in all)" if len(shared) > 1 else ""
            raise InputError(f"{texts_paths[first]}, {path}", f"id {shared[0]}",
                             f"the same query id in datasets {first} and {name}{more}: ids are unique within a "
                             "dataset only, so give one of them ids of its own (a beir, trec or ir_datasets "
                             "dataset: datasets.<name>.subset, its ids being <subset>-<n>; another layout: "
                             "another id prefix in its file)")
        owner.update(dict.fromkeys(ids, name))
    return {"datasets": len(texts_paths), "queries": total}


def gold_answers(texts_path: str | os.PathLike) -> pl.DataFrame:
    """``id, answers`` of a texts table; ``answers`` empty for every id when the table predates the column."""
    texts = read_texts_table(texts_path, ["id"])
    if "answers" not in pl.read_parquet_schema(texts_path):
        return texts.select("id", pl.lit([], dtype=pl.List(pl.String)).alias("answers"))
    return read_texts_table(texts_path, ["id", "answers"])
