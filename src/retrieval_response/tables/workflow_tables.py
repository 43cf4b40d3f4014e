"""The workflow's own Parquet tables read back by a later stage, checked before use.

A table edited by hand (or truncated, or from another version) must fail with one line per broken
row ``<file>: row N (id <id>): <rule>`` (:func:`~retrieval_response.tables.sample_rules.check_rules`),
never with a polars traceback naming no file. The rules of the ranked, graded and analysis tables
are those of every sample table, published ones included (:mod:`.sample_rules`); here are the
readers, and the rules of the other tables:

- texts (:func:`read_texts_table`): unique ids; each ranked id of a design has ``Np`` positives
  and ``Nc - Np`` negatives to rank (:func:`check_candidates`);
- judgments (:func:`read_judgments_table`): ``id`` and ``text`` given, (id, text) unique, an
  UMBRELA label in 0..3 and a NO-RESPONSE probability in [0, 1] where given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import polars as pl

from retrieval_response.infra.errors import InputError
from retrieval_response.tables.graded import GRADED_COLUMNS
from retrieval_response.tables.sample_rules import (
    RANKED_RULE_COLUMNS,
    analysis_rules,
    check_rules,
    duplicate_rule,
    is_corpus_ranking,
    validate_graded,
    validate_ranked,
)

RANKED_COLUMNS = ("id", "subset", "E", "Nc", "Np", "K", "P", "R", "rank")
SAMPLE_COLUMNS = ("id", "E", "Nc", "Np", "K", "rank", "inK", "grade")
TEXTS_COLUMNS = ("id", "q", "p", "n")


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


def read_ranked_table(path: str | os.PathLike, columns: Sequence[str] = RANKED_COLUMNS) -> pl.DataFrame:
    """A ranked table, checked (``validate_ranked`` on the columns it needs), with ``columns`` only."""
    needed = dict.fromkeys([*columns, *RANKED_RULE_COLUMNS])
    ranked = read_table(path, list(needed), "ranked")
    validate_ranked(ranked, path, corpus=is_corpus_ranking(pl.read_parquet_schema(path)))
    return ranked.select(columns)


def read_graded_table(path: str | os.PathLike) -> pl.DataFrame:
    """A graded table (an output of ``merge_graded``), checked (:func:`validate_graded`)."""
    graded = read_table(path, GRADED_COLUMNS, "graded", all_columns=True)
    validate_graded(graded, path)
    return graded


TRACE_SAMPLE_COLUMNS = ("id", "E", "Nc", "Np", "K", "rank", "inK", "record")
"""Columns of an analysis table of traces (``tables.trace_samples.collect_traces``); ``record`` marks one."""


def read_analysis_table(path: str | os.PathLike) -> pl.DataFrame:
    """The analysis table (``results/analysis/graded.parquet``), checked
    (:func:`~retrieval_response.tables.sample_rules.analysis_rules`: its samples and, where counted,
    ``np_2K``; a table of traces, column ``record``, by the traces' rules)."""
    traces = "record" in read_table(path, (), "analysis", all_columns=True).columns
    table = read_table(path, TRACE_SAMPLE_COLUMNS if traces else SAMPLE_COLUMNS, "analysis", all_columns=True)
    check_rules(table, path, analysis_rules(table.columns))
    return table


def read_texts_table(path: str | os.PathLike, columns: Sequence[str] = TEXTS_COLUMNS) -> pl.DataFrame:
    """A texts table (an output of ``prepare_dataset``) with ``columns``: ids present and unique."""
    texts = read_table(path, list(dict.fromkeys(["id", *columns])), "texts")
    check_rules(texts, path, {"id must not be null": pl.col("id").is_null(),
                              "duplicate id": duplicate_rule(["id"], texts.columns)})
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
        "duplicate (id, text)": duplicate_rule(["id", "text"], judgments.columns),
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
            (pl.col("n_p") < pl.col("Np")) | (pl.col("n_n") < pl.col("Nc") - pl.col("Np")),
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
