"""The rules of ranked and graded sample tables, and the one reporter of broken rules.

Every sample table is checked here, whatever file it came from: the workflow's Parquet tables
(:mod:`.workflow_tables`, checked by their writers and readers) and the published JSON files
(:mod:`.published`, records made a frame first). A rule is a polars expression, true on the rows
that break it (a null counts as broken), evaluated on the whole table at once. Every broken row
gets one line ``<file>: <record> (id <id>): <rule>[: <what the row holds>]`` naming its first
broken rule (:func:`check_rules`); the record is its position, ``record N`` or ``line N`` in a JSON
file (the frame's ``_record`` column), ``row N`` in a Parquet table (1-based), its id shown when
it is a safe name. Several broken rows raise :class:`~retrieval_response.infra.errors.InputErrors`
(at most ``InputErrors.MAX_LINES`` lines, then a count of the rest).

The rules are the relations the samples obey (docs/METHODS.md#samples):

- ranked (:func:`ranked_rules`): ``id`` and ``E`` safe names, ``1 <= Nc <= MAX_NC``,
  ``1 <= Np <= Nc`` (Np = Nc: every candidate is relevant, as a corpus-level query that retrieved
  only its positives); ``rank`` distinct values of ``0..Nc-1``, all Nc of them and ``K`` increasing in
  ``1..Nc``, or, in a corpus-level ranking (column ``judged``), every index >= Np (the positives
  not retrieved have no position) and ``K`` increasing from 1 up; ``P``, ``R`` as long as ``K`` and
  equal to n_p/K and n_p/Np, n_p the positives (``rank < Np``) in ``rank[:K]`` (the whole rank when
  it is shorter); (id, E, Nc, Np) unique;
- graded and analysis samples (:func:`sample_rules`): the same names and counts; ``K`` in
  ``1..MAX_NC`` and at most Nc unless the top K is short; ``inK`` 1 to K values 0/1, at most Np of
  them 1 and at most Nc - Np of them 0, fewer than K only when the ranker retrieved no more (a
  short corpus-level retrieval: then every index >= Np is in it); ``rank`` (where given) distinct
  values of ``0..Nc-1``, as long as ``inK``, ``inK = (rank < Np)``; a grade in 1..5 or null;
- graded tables (:func:`graded_rules`) also: ``grade_expected`` in [1, 5] or null, a non-empty
  ``status`` on every row (where given, in the published files), ``"graded"`` exactly when the
  grade is given, the same for the grade against the gold answers; (id, E, Nc, Np, K) unique;
  the samples of one (id, E, Nc, Np) at several K prefixes of one ranking (``rank``, ``inK``);
  against a ranked table
  (:func:`check_graded_against_ranked`): ``rank = ranked.rank[:K]``, ``inK = (ranked.rank[:K] < Np)``;
- traces analysis tables: :func:`trace_sample_rules`;
- the records of a traces file (:func:`trace_record_rules`), as ``datasets.traces`` reads them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from retrieval_response.infra.errors import InputError, raise_all
from retrieval_response.infra.paths import SAFE_NAME_RULE, safe_name_expr, shown_value
from retrieval_response.measures.ranked_lists import flatten, precision, recall
from retrieval_response.tables.graded import GOLD_COLUMNS, GRADED_COLUMNS

MAX_NC = 1_000_000
"""The largest number of candidates per query a sample may have."""

SAMPLE_KEY = ("id", "E", "Nc", "Np")
"""One ranking: a query, a ranker and a design."""

RANKED_RULE_COLUMNS = ("id", "E", "Nc", "Np", "K", "P", "R", "rank")
"""The columns the ranked-table rules read."""

PRECISION_TOLERANCE = 1e-9
"""How far a ranked table's P and R may lie from n_p/K and n_p/Np (rounding of another writer)."""

RECORD = "_record"
"""The column of a frame that locates each row in its file (``record 3``, ``line 7``); without it a
row is ``row N``."""

FILE = "_file"
"""The column of a frame read from several files that names each row's file (else the path given)."""


@dataclass(frozen=True)
class Rule:
    """A rule and what a breaking row holds: ``broken`` is true where a row breaks it (an
    expression, or a function of the frame giving one bool per row); ``detail`` a String expression
    saying what the row holds instead, evaluated on the breaking rows only, or on the whole frame
    when ``context`` (it looks at other rows: a window)."""

    broken: pl.Expr | Callable[[pl.DataFrame], pl.Series]
    detail: pl.Expr | None = None
    context: bool = False


Rules = dict[str, pl.Expr | Rule]
"""Rule text -> rule (a bare expression: a rule without detail), in the order a row is checked."""

_nc, _np, _k, _rank, _ink = pl.col("Nc"), pl.col("Np"), pl.col("K"), pl.col("rank"), pl.col("inK")
_ROW = "_row"


def _record_label(record: pl.Expr, sample_id: pl.Expr) -> pl.Expr:
    """``<record> (id <id>)``, the id shown only when it is a safe name (it may hold anything)."""
    sample_id = sample_id.cast(pl.String)
    return pl.when(safe_name_expr(sample_id).fill_null(False)).then(
        pl.format("{} (id {})", record, sample_id)).otherwise(record)


def _row_label(columns: Sequence[str]) -> pl.Expr:
    """Where a row is in its file: the frame's ``_record`` column, else ``row N`` (1-based)."""
    record = pl.col(RECORD) if RECORD in columns else pl.format("row {}", pl.col(_ROW) + 1)
    return _record_label(record, pl.col("id")) if "id" in columns else record


def check_rules(frame: pl.DataFrame, path: str | os.PathLike, rules: Rules) -> None:
    """InputError, one line ``<path>: <record>: <rule>[: <detail>]`` per row of ``frame`` that breaks
    a rule, naming its first broken rule in the order of ``rules`` (a null counts as broken); the
    record is its ``_record`` (``record N``, ``line N``) or ``row N``, with the id when ``frame``
    has one that is a safe name; the path is the row's ``_file`` where ``frame`` has that column.
    Each rule is evaluated on the rows that broke none before it, so a
    later rule may assume the earlier ones hold. Nothing when every row keeps every rule."""
    remaining = frame.with_row_index(_ROW)
    label = _row_label(frame.columns)
    found = []
    for text, rule in rules.items():
        if not remaining.height:
            break
        rule = rule if isinstance(rule, Rule) else Rule(rule)
        broken = (remaining.select(rule.broken.fill_null(True)).to_series() if isinstance(rule.broken, pl.Expr)
                  else rule.broken(remaining).fill_null(True))
        if not broken.any():
            continue
        message = pl.lit(text) if rule.detail is None else pl.concat_str(
            pl.lit(f"{text}: "), rule.detail.cast(pl.String).fill_null("null"))
        columns = {_ROW: pl.col(_ROW), "_label": label, "_rule": message,
                   "_path": pl.col(FILE) if FILE in frame.columns else pl.lit(str(path))}
        rows = (remaining.select(**columns).filter(broken) if rule.context
                else remaining.filter(broken).select(**columns))
        found.append(rows)
        remaining = remaining.filter(~broken)
    if found:
        report = pl.concat(found).sort(_ROW)
        raise_all([InputError(where, record, rule)
                   for where, record, rule in report.select("_path", "_label", "_rule").iter_rows()])


def _check_columns(frame: pl.DataFrame, path: str | os.PathLike, columns: Sequence[str], what: str) -> None:
    """InputError ``<path>: columns: missing column ...`` when ``frame`` lacks one of ``columns``."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(path, "columns", f"missing column {missing[0]!r} of a {what} table")


def _shown_list(values: pl.Expr, limit: int = 8) -> pl.Expr:
    """``[a, b, ...]``: the first ``limit`` values of a list expression, for a message."""
    more = pl.when(values.list.len() > limit).then(pl.lit(", ...")).otherwise(pl.lit(""))
    return pl.concat_str(pl.lit("["), values.list.head(limit).cast(pl.List(pl.String)).list.join(", "), more, pl.lit("]"))


def _in_top(rank: pl.Expr, Np: pl.Expr) -> pl.Expr:
    """Per row, the list ``rank < Np`` as 0/1 (Int64): which ranked candidates are positives."""
    return (rank.cast(pl.List(pl.Int64)) - Np.cast(pl.Int64)).list.eval((pl.element() < 0).cast(pl.Int64))


def _not_null_rules(columns: Sequence[str]) -> Rules:
    return {f"{c} must not be null": pl.col(c).is_null() for c in columns}


def _count_rules() -> Rules:
    """Nc and Np within their bounds (the other rules may build lists of Nc values)."""
    return {
        f"Nc must lie in 1..{MAX_NC}": Rule(~_nc.is_between(1, MAX_NC), pl.format("Nc = {}", _nc)),
        "need 1 <= Np <= Nc": Rule(~((_np >= 1) & (_np <= _nc)), pl.format("Np = {}, Nc = {}", _np, _nc)),
    }


def _name_rules() -> Rules:
    """``id`` and ``E`` are safe names: they may end up in output file names (:mod:`retrieval_response.infra.paths`)."""
    return {f"{what} must be a safe name": Rule(
        ~safe_name_expr(pl.col(column)),
        pl.col(column).map_elements(lambda v: f"{shown_value(v)} cannot be used in a file name ({SAFE_NAME_RULE})",
                                    return_dtype=pl.String))
        for column, what in (("id", "id"), ("E", "ranker label E"))}


def id_subset_rules() -> Rules:
    """An id ``<subset>-<number>``, where the subset is read from the id (the published layout)."""
    return {"id must be '<subset>-<number>'": Rule(~pl.col("id").str.contains("-", literal=True),
                                                  pl.col("id").map_elements(shown_value, return_dtype=pl.String))}


def _rank_value_rules() -> Rules:
    """``rank`` (where given) holds distinct values in 0..Nc-1."""
    low, high = _rank.list.min(), _rank.list.max()
    return {
        "rank values must lie in 0..Nc-1": Rule(((low < 0) | (high >= _nc)).fill_null(False),
                                                pl.format("{} with Nc = {}", pl.when(low < 0).then(low).otherwise(high), _nc)),
        "rank must not repeat a candidate": Rule(
            (_rank.list.n_unique() != _rank.list.len()).fill_null(False),
            pl.format("{} appears twice", _rank.list.eval(pl.element().filter(pl.element().is_duplicated())).list.first())),
    }


def duplicate_rule(key: Sequence[str], columns: Sequence[str]) -> Rule:
    """Broken by a row whose ``key`` (columns of a table with ``columns``) repeats an earlier row's,
    naming that row: each repeat gets its line, the first occurrence none."""
    return Rule(~pl.struct(*key).is_first_distinct(),
                pl.format("the key of {}", _row_label(columns).first().over(key)), context=True)


def ranked_rules(columns: Sequence[str], *, corpus: bool) -> Rules:
    """The rules of a ranked table with ``columns`` (module docstring); ``corpus``: a corpus-level ranking."""
    k_increasing = ((_k.list.len() == 0) | (_k.list.min() < 1)
                    | (_k.list.diff(null_behavior="drop").list.min().fill_null(1) <= 0))
    negatives = (_rank.cast(pl.List(pl.Int64)) - _np.cast(pl.Int64)).list.eval(pl.element() >= 0).list.sum()
    if corpus:
        shape = {
            "rank must hold every retrieved candidate (every index >= Np)":
                Rule(negatives != _nc - _np, pl.format("{} of the Nc - Np = {} indexes >= Np", negatives, _nc - _np)),
            "K must be increasing values >= 1": Rule(k_increasing, _shown_list(_k)),
        }
    else:
        shape = {
            "rank must be a permutation of 0..Nc-1 (all Nc candidates)":
                Rule(_rank.list.len() != _nc, pl.format("{} values, Nc = {}", _rank.list.len(), _nc)),
            "K must be increasing values in 1..Nc": Rule(k_increasing | (_k.list.max() > _nc),
                                                         pl.format("K = {}, Nc = {}", _shown_list(_k), _nc)),
        }
    lengths = (pl.col("P").list.len() != _k.list.len()) | (pl.col("R").list.len() != _k.list.len())
    return {
        **_not_null_rules(RANKED_RULE_COLUMNS),
        **_count_rules(),
        **_name_rules(),
        **_rank_value_rules(),
        **shape,
        "P and R must be as long as K": Rule(lengths, pl.format("len(K) = {}, len(P) = {}, len(R) = {}", _k.list.len(),
                                                                pl.col("P").list.len(), pl.col("R").list.len())),
        "duplicate (id, E, Nc, Np)": duplicate_rule(SAMPLE_KEY, columns),
        "P and R must equal n_p/K and n_p/Np, n_p the positives (rank < Np) in rank[:K]":
            Rule(lambda ranked: ~_precision_recall_match_rank(ranked),
                 pl.format("K = {}, P = {}, R = {}, Np = {}", *map(_shown_list, (_k, pl.col("P"), pl.col("R"))), _np)),
    }


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


def is_corpus_ranking(columns: Sequence[str] | pl.Schema) -> bool:
    """True for the columns of the ranked layout of a corpus-level ranker (``judged``, as in
    ``corpus_retrieval.CORPUS_RANKED_SCHEMA``): its ``rank`` lists the retrieved documents only, so
    it may be shorter than Nc and than K, and its K are not bounded by Nc."""
    return "judged" in columns


def validate_ranked(ranked: pl.DataFrame, path: str | os.PathLike, *, corpus: bool | None = None) -> None:
    """The ranked-table rules (:func:`ranked_rules`) on ``ranked``; InputError naming each broken row
    (:func:`check_rules`), or a missing column. ``corpus``: the table is a corpus-level ranking
    (default: it has the column ``judged``)."""
    _check_columns(ranked, path, RANKED_RULE_COLUMNS, "ranked")
    corpus = is_corpus_ranking(ranked.columns) if corpus is None else corpus
    check_rules(ranked, path, ranked_rules(ranked.columns, corpus=corpus))


def sample_rules(columns: Sequence[str], *, required: Sequence[str] = ()) -> Rules:
    """The rules every graded sample obeys (module docstring), in a table with ``columns`` (``rank``
    and ``grade`` are checked where the table has them, a null ``rank`` meaning none given);
    ``required``: further columns that must not be null."""
    n_ink, positives = _ink.list.len(), _ink.list.sum()
    negatives, short = n_ink - positives, n_ink < _k
    rules: Rules = {
        **_not_null_rules(("id", "E", "Nc", "Np", "K", "inK", *required)),
        **_count_rules(),
        **_name_rules(),
        f"K must lie in 1..{MAX_NC}": Rule(~_k.is_between(1, MAX_NC), pl.format("K = {}", _k)),
        "inK must hold only 0 and 1": Rule(~_ink.list.eval(pl.element().is_in([0, 1])).list.all(), _shown_list(_ink)),
        "len(inK) must lie in 1..K": Rule(~n_ink.is_between(1, _k), pl.format("len(inK) = {}, K = {}", n_ink, _k)),
        "K must be at most Nc unless the top K is short (a ranker that retrieved fewer than K)":
            Rule((_k > _nc) & ~short, pl.format("K = {}, Nc = {}", _k, _nc)),
        "sum(inK) (the positives in the top K) must be at most Np":
            Rule(positives > _np, pl.format("sum(inK) = {}, Np = {}", positives, _np)),
        "the top K must hold at most Nc - Np negatives (0 in inK)":
            Rule(negatives > _nc - _np, pl.format("{} zeros, Nc - Np = {}", negatives, _nc - _np)),
    }
    if "rank" in columns:
        given = _rank.is_not_null()
        rules |= {
            **_rank_value_rules(),
            "len(rank) must equal len(inK)": Rule(given & (_rank.list.len() != n_ink),
                                                  pl.format("len(rank) = {}, len(inK) = {}", _rank.list.len(), n_ink)),
            "inK must be 1 exactly where rank < Np": Rule(
                given & (_in_top(_rank, _np) != _ink.cast(pl.List(pl.Int64))),
                pl.format("inK = {}, rank = {}, Np = {}", _shown_list(_ink), _shown_list(_rank), _np)),
        }
    rules["a top K shorter than K must hold every index >= Np (a ranker that retrieved no more)"] = Rule(
        short & (negatives != _nc - _np), pl.format("K = {}, {} of the Nc - Np = {} indexes >= Np", _k, negatives, _nc - _np))
    if "grade" in columns:
        rules |= _grade_range_rules("grade")
    return rules


def _out_of(column: str, low: int, high: int) -> Rule:
    """``column`` given and outside ``low..high``, showing its value."""
    value = pl.col(column)
    return Rule(value.is_not_null() & ~value.is_between(low, high), pl.format("{} = {}", pl.lit(column), value))


def _grade_range_rules(grade: str) -> Rules:
    return {f"{grade} must lie in 1..5 or be null": _out_of(grade, 1, 5)}


def _grade_rules(columns: Sequence[str], grade: str, expected: str, status: str, *, optional: bool) -> Rules:
    """One grade's rules: ``grade`` in 1..5 or null, ``expected`` (where present) in [1, 5] or null,
    ``status`` (where present) a non-empty string, ``"graded"`` exactly when ``grade`` is given.
    With ``optional`` (the published layout, whose records may lack a status), a null ``status``
    says nothing, except that a gold grade without a ``status_gold`` was not asked: null."""
    rules = _grade_range_rules(grade) if grade in columns else {}
    if expected in columns:
        rules[f"{expected} must lie in [1, 5] or be null"] = _out_of(expected, 1, 5)
    if status not in columns:
        return rules
    state, value = pl.col(status), pl.col(grade)
    shown_state = state.map_elements(shown_value, return_dtype=pl.String)
    if optional and grade in GOLD_COLUMNS:
        rules[f"{grade} must be null when {status} is null (not asked)"] = Rule(
            state.is_null() & value.is_not_null(), pl.format("{} = {}", pl.lit(grade), value))
    empty = (state == "") if optional else (state.is_null() | (state == ""))
    rules[f"{status} must be a non-empty string"] = Rule(empty.fill_null(False), shown_state)
    rules[f"{grade} must be given exactly when {status} is 'graded'"] = Rule(
        state.is_not_null() & (value.is_not_null() != (state == "graded")),
        pl.format("{} {}, {} {}", pl.lit(status), shown_state, pl.lit(grade), value.cast(pl.String).fill_null("null")))
    return rules


def _prefix_rules(columns: Sequence[str]) -> Rules:
    """The samples of one (id, E, Nc, Np) at several K are prefixes of one ranking: each row's
    ``rank`` and ``inK`` extend those of the same sample at the next smaller K."""
    rules: Rules = {}
    for field in ("rank", "inK"):
        if field not in columns:
            continue
        values = pl.col(field).cast(pl.List(pl.Int64))
        previous = values.shift(1).over(SAMPLE_KEY, order_by="K")
        head = values.list.head(previous.list.len())
        rules[f"the samples of one (id, E, Nc, Np) at several K must be prefixes of one ranking ({field})"] = Rule(
            previous.is_not_null() & values.is_not_null() & (head != previous),
            pl.format("{}[:{}] = {} differs from {} = {} of {} (K={})", pl.lit(field), previous.list.len(), _shown_list(head),
                      pl.lit(field), _shown_list(previous), _row_label(columns).shift(1).over(SAMPLE_KEY, order_by="K"),
                      _k.shift(1).over(SAMPLE_KEY, order_by="K")),
            context=True)
    return rules


def graded_rules(columns: Sequence[str], *, required: Sequence[str] = (), optional_status: bool = False) -> Rules:
    """The rules of a graded table with ``columns`` (module docstring): :func:`sample_rules`, the
    grade's and, where its columns are, the gold grade's, unique (id, E, Nc, Np, K), prefixes of
    one ranking. ``optional_status``: ``status`` and ``status_gold`` may be null, as in the
    published files (whose records may lack them, and which merge studies graded against gold
    answers or not): a null ``status_gold`` then means not asked, ``grade_gold`` null."""
    return {
        **sample_rules(columns, required=required),
        **_grade_rules(columns, "grade", "grade_expected", "status", optional=optional_status),
        **_grade_rules(columns, "grade_gold", "grade_gold_expected", "status_gold", optional=optional_status),
        "duplicate (id, E, Nc, Np, K)": duplicate_rule((*SAMPLE_KEY, "K"), columns),
        **_prefix_rules(columns),
    }


def validate_graded(graded: pl.DataFrame, path: str | os.PathLike) -> None:
    """The graded-table rules of the workflow (:func:`graded_rules`, docs/METHODS.md#graded-table):
    every column of ``GRADED_COLUMNS`` and, with any of ``GOLD_COLUMNS``, all of them; ``rank`` on
    every row; a status on every row (``status_gold`` too); InputError naming each broken row."""
    gold = any(c in graded.columns for c in GOLD_COLUMNS)
    _check_columns(graded, path, (*GRADED_COLUMNS, *(GOLD_COLUMNS if gold else ())), "graded")
    check_rules(graded, path, graded_rules(graded.columns, required=("rank",)))


def check_graded_against_ranked(graded: pl.DataFrame, graded_path: str | os.PathLike, ranked: pl.DataFrame,
                                ranked_path: str | os.PathLike) -> None:
    """Each graded sample that has a ranked sample (same id, E, Nc, Np; ``ranked`` checked, so one)
    agrees with its ranking: ``rank`` (where given) is ranked ``rank[:K]`` and ``inK`` is
    ``rank[:K] < Np`` (the top K as long as ``inK``, shorter for a short top K); InputError naming
    each graded row that does not and its ranked record."""
    ranked_side = ranked.with_row_index(_ROW).select(
        *SAMPLE_KEY, _ranked=pl.col("rank").cast(pl.List(pl.Int64)),
        _ranked_at=pl.concat_str(pl.lit(f"{ranked_path} "), _row_label(ranked.columns)))
    joined = graded.join(ranked_side, on=list(SAMPLE_KEY), how="left", maintain_order="left")
    top = pl.col("_ranked").list.head(_ink.list.len())
    rules: Rules = {}
    if "rank" in graded.columns:
        rules["rank must be rank[:K] of its ranked sample"] = Rule(
            top.is_not_null() & _rank.is_not_null() & (_rank.cast(pl.List(pl.Int64)) != top),
            pl.format("rank = {} differs from rank[:K] = {} of {}", _shown_list(_rank), _shown_list(top), pl.col("_ranked_at")))
    rules["inK must be rank[:K] < Np of its ranked sample"] = Rule(
        top.is_not_null() & (_ink.cast(pl.List(pl.Int64)) != _in_top(top, _np)),
        pl.format("inK = {} differs from rank[:K] < Np = {} of {}", _shown_list(_ink), _shown_list(_in_top(top, _np)),
                  pl.col("_ranked_at")))
    check_rules(joined, graded_path, rules)


def trace_sample_rules(columns: Sequence[str]) -> Rules:
    """Rules every sample of a traces analysis table with ``columns`` obeys: ``rank`` the trace's K
    documents (distinct candidates of 0..Nc-1), ``inK`` their 0/1 relevance from the labels or qrels
    (not ``rank < Np``), ``Np`` null (unknown) or >= 0, grades (where present) in 1..5 or null."""
    return {
        "id must not be null": pl.col("id").is_null(),
        "E (the system) must not be null": pl.col("E").is_null(),
        "K must be >= 1": _k < 1,
        **_rank_value_rules(),
        "len(rank) must be K (the trace's documents)": _rank.list.len() != _k,
        "len(inK) != len(rank)": _ink.list.len() != _rank.list.len(),
        "inK must hold 0 or 1": ~_ink.list.eval(pl.element().is_in([0, 1])).list.all(),
        "Np must be null (unknown) or >= 0": _np.is_not_null() & (_np < 0),
        **{rule: expr for grade in ("grade_context", "grade_gold") if grade in columns
           for rule, expr in _grade_range_rules(grade).items()},
    }


def analysis_rules(columns: Sequence[str]) -> Rules:
    """The rules of the analysis table: a traces table (column ``record``) by
    :func:`trace_sample_rules`; else ``sample_rules`` (``rank`` required) and, where counted,
    ``np_2K`` in ``sum(inK)..Np`` (the top 2K holds the top K)."""
    if "record" in columns:
        return trace_sample_rules(columns)
    rules = sample_rules(columns, required=("rank",))
    if "np_2K" in columns:
        rules["np_2K (positives in the top 2K) must lie in sum(inK)..Np"] = Rule(
            pl.col("np_2K").is_not_null() & ~pl.col("np_2K").is_between(_ink.list.sum(), _np),
            pl.format("np_2K = {}, sum(inK) = {}, Np = {}", pl.col("np_2K"), _ink.list.sum(), _np))
    return rules


def quoted(text: pl.Expr) -> pl.Expr:
    """Per row, ``'text'`` for an error line: line breaks shown as ``\\n`` (the line cuts a long value,
    ``infra.errors.shorten_values``)."""
    text = text.str.replace_all("\n", "\\n", literal=True).str.replace_all("\r", "\\r", literal=True)
    return pl.concat_str(pl.lit("'"), text, pl.lit("'"))


def _first_doc(docs: pl.Expr, broken: pl.Expr) -> pl.Expr:
    """``docs[i]``: the 1-based position of the first document of a record for which ``broken``
    (an expression of ``pl.element()``, a document struct) holds."""
    return pl.format("docs[{}]", docs.list.eval(broken.fill_null(True)).list.arg_max() + 1)


def _missing_of_first(docs: pl.Expr, broken: pl.Expr) -> pl.Expr:
    """``id``, ``text`` or ``id and no text``: what the first document of a record for which
    ``broken`` holds lacks."""
    doc = docs.list.get(docs.list.eval(broken.fill_null(True)).list.arg_max())
    no_id, no_text = doc.struct.field("id").is_null(), doc.struct.field("text").is_null()
    return (pl.when(doc.is_null() | (no_id & no_text)).then(pl.lit("id and no text"))
            .when(no_id).then(pl.lit("id")).otherwise(pl.lit("text")))


TIME_RULE = "time must be an ISO 8601 date or date and time string (2026-03-01 or 2026-03-01T14:05:00Z)"
"""The rule a traces record's ``time`` breaks when it is no ISO 8601 string (``datasets.traces.iso_time``)."""


def trace_record_rules(labels: Sequence[str]) -> Rules:
    """The rules on the values of the records of traces files (``datasets.traces``: columns
    ``_file, _record, query_id, query`` (stripped), ``docs, answer``, ``feedback`` as written,
    ``_feedback`` its number (null when unmapped), ``time`` as written, ``_time`` its UTC datetime
    (null when it is no ISO 8601 string), ``system`` (the file's name where null),
    ``_secret_system`` (whether the system looks like a secret, ``infra.secrets.looks_like_secret``),
    ``_doc_clash``), given the ``labels`` of ``feedback_labels``: the four
    fields given; ``query_id`` non-empty; ``query``, ``answer`` and each document's ``text``
    non-blank; one query text per ``query_id`` (the first record's); ``docs`` non-empty, each
    document ``{id, text}`` with a non-empty id, ids distinct within the record; ``feedback`` a
    finite number or a mapped label; ``time`` an ISO 8601 date or date and time
    (:data:`TIME_RULE`); ``system`` not a secret, a safe name; one record per (system, query_id);
    one text per document id (``_doc_clash``: where another was seen first)."""
    where = pl.format("{} {}", pl.col(FILE), pl.col(RECORD))
    query_id, query, docs, feedback = pl.col("query_id"), pl.col("query"), pl.col("docs"), pl.col("feedback")
    doc_id, doc_text = pl.element().struct.field("id"), pl.element().struct.field("text")
    first_query = query.first().over("query_id")
    system = pl.col("system")
    no_field = doc_id.is_null() | doc_text.is_null()
    mapped = ", ".join(labels) or "none"
    return {
        **{f"missing field {name}": pl.col(name).is_null() for name in ("query_id", "query", "docs", "answer")},
        "query_id must be a non-empty string": query_id == "",
        "query must be a non-blank string": query == "",
        "give one text per query_id": Rule(query != first_query, pl.format(
            "query {} has two texts, {} here and {} at {}", quoted(query_id), quoted(query), quoted(first_query),
            where.first().over("query_id")), context=True),
        "answer must be a non-blank string": pl.col("answer").str.strip_chars() == "",
        "docs is empty: a trace needs the documents the answer was written from": docs.list.len() == 0,
        'each document is {"id", "text"}': Rule(
            docs.list.eval(pl.element().is_null() | no_field).list.any(),
            pl.format("{} has no {}", _first_doc(docs, pl.element().is_null() | no_field),
                      _missing_of_first(docs, pl.element().is_null() | no_field))),
        "a document's id must be a non-empty string": Rule(
            docs.list.eval(doc_id == "").list.any(), pl.format("{}.id is empty", _first_doc(docs, doc_id == ""))),
        "a document's text must be a non-blank string": Rule(
            docs.list.eval(doc_text.str.strip_chars() == "").list.any(),
            pl.format("{}.text is blank", _first_doc(docs, doc_text.str.strip_chars() == ""))),
        "a document id appears once in a trace": Rule(
            docs.list.eval(doc_id).list.n_unique() != docs.list.len(),
            pl.format("{}.id {} is repeated within the trace", _first_doc(docs, ~doc_id.is_first_distinct()),
                      quoted(docs.list.eval(doc_id.filter(doc_id.is_duplicated())).list.first()))),
        "feedback must be a number or a label that the dataset's feedback_labels maps to one": Rule(
            feedback.is_not_null() & pl.col("_feedback").is_null(),
            pl.format("label {} is not mapped (mapped now: {})", quoted(feedback), pl.lit(mapped))),
        "feedback must be a finite number": Rule(pl.col("_feedback").is_not_null() & ~pl.col("_feedback").is_finite(),
                                                 pl.format("feedback {}", feedback)),
        TIME_RULE: Rule(pl.col("time").is_not_null() & pl.col("_time").is_null(),
                        pl.format("found {}", quoted(pl.col("time")))),
        "no system, and the file's name cannot be one: add a system field or rename the file": Rule(
            system.is_null(), pl.lit(SAFE_NAME_RULE)),
        "system looks like an API key or token, which would reach every result (the value is not shown)":
            pl.col("_secret_system"),
        "system cannot be used in a file name": Rule(
            ~safe_name_expr(system), pl.format("system {}: {}", quoted(system), pl.lit(SAFE_NAME_RULE))),
        "one trace per system and query_id": Rule(
            ~pl.struct(system, query_id).is_first_distinct(),
            pl.format("a second trace of query {} by system {} (the first is at {})", quoted(query_id), quoted(system),
                      where.first().over(system, query_id)), context=True),
        "give one text per document id in the dataset": Rule(pl.col("_doc_clash").is_not_null(), pl.col("_doc_clash")),
    }
