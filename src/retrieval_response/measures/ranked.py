"""The ranked-list evaluator: P@K, R@K, RR@K, AP@K, nDCG@K, judged@K and P_upper@K of ranked lists
of document ids against graded, possibly incomplete judgments (docs/METHODS.md#ranked-list-evaluator).

The contract is that of the chapter "Metrics that Answer Different Questions" (ranked-list
metrics with incomplete judgments), stated in every run's output by :data:`CONVENTIONS`. For
one query, with ``ranking`` its document ids best first, ``judgments`` its grades (integers
>= 0, relevant when > 0), ``prefix = ranking[:K]`` and rel_i = 1 when the i-th id of the
prefix is judged above 0 (an unjudged id counts as not relevant), |R| = the query's ids judged
above 0, n_p = sum_i rel_i:

- ``P@K`` = n_p / K: the denominator is K even when fewer than K ids came back (trec_eval's
  ``P_k``; Voorhees & Harman, *TREC*, 2005);
- ``R@K`` = n_p / |R| (trec_eval's ``recall_k``);
- ``RR@K`` = 1 / the rank of the first relevant id of the prefix, 0 when there is none
  (Kantor & Voorhees 2000);
- ``AP@K`` = (1/|R|) sum_{i <= K} rel_i * P@i, truncated average precision with |R| (not
  min(|R|, K)) as denominator, trec_eval's ``map_cut_k`` (Voorhees & Harman 2005);
- ``nDCG@K`` = DCG@K / IDCG@K, DCG@K = sum_{i <= K} (2^g_i - 1) / log2(i + 1), g_i the grade of
  the i-th id (0 unjudged), IDCG@K the DCG of the query's judged grades sorted in descending
  order and cut at K (Järvelin & Kekäläinen, *Cumulated gain-based evaluation of IR
  techniques*, ACM TOIS 20(4), 2002, with the exponential gain of Burges et al. 2005);
- ``judged@K`` = judged ids of the prefix / ids of the prefix (ir_measures' ``Judged@k``, after
  OpenNIR's judgment rate): how far the point estimates can be trusted, 1 when they are exact;
- ``P_upper@K`` = (n_p + unjudged ids of the prefix) / K: P@K if every unjudged id were relevant,
  the optimistic bound beside the pessimistic P@K.

Undefined is None, never 0: without a relevant id (|R| = 0), R@K, RR@K, AP@K and nDCG@K; for an
empty prefix, judged@K. A query with relevant ids and an empty ranking scores 0 (P@K, R@K, RR@K,
AP@K, nDCG@K, P_upper@K). The order given is final: ties are never broken, least of all in favour
of relevant ids. The formulas are those of the analysis (:mod:`retrieval_response.measures.formulas`
and :mod:`retrieval_response.measures.ranked_lists`), evaluated over all queries at once.

Differences from trec_eval and ir_measures (which wraps it), so that numbers compare: trec_eval
re-sorts a run by score and breaks ties by document id (here a mapping's order is final, and a
run frame is sorted as :func:`run_order` says); its ``ndcg_cut`` uses the grade itself as gain
(equal on 0/1 grades; ir_measures' ``nDCG(gains={g: 2**g - 1})@k`` is ours); it scores a query
without a relevant document 0 where this module says None, and leaves out a judged query the run
does not rank, which here scores as an empty ranking.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import polars as pl

from retrieval_response.measures.formulas import average_precision_at_k, graded_ndcg_at_k, reciprocal_rank_at_k
from retrieval_response.measures.ranked_lists import precision, recall

GRADE_BOUND = 100
"""A relevance grade lies in [-GRADE_BOUND, GRADE_BOUND] (a qrels file, ``datasets.judged_corpus``) and
in [0, GRADE_BOUND] here: gains 2^g - 1 of nDCG stay finite and exact enough to sum (2^100 ~ 1.3e30),
far beyond any judging scale in use (TREC's go up to 4)."""

MEASURE_NAMES: tuple[str, ...] = ("P@K", "R@K", "RR@K", "AP@K", "nDCG@K", "judged@K", "P_upper@K")
"""The measures of a ranked list, under the registry's names (``registry.MEASURES`` names
the per-sample ``RR@K``, ``AP@K`` and ``nDCG@K`` alike)."""

CONVENTIONS: Mapping[str, str] = {
    "order": "the ranking's order is final (a run frame: descending score, ties by rank, then row order); "
             "ties are never broken in favour of relevant ids; a repeated id is an error",
    "prefix": "the first K ids of the ranking; fewer when fewer came back",
    "relevant": "grade > 0; |R| = the query's ids judged above 0; an unjudged id is not relevant",
    "P@K": "relevant ids in the prefix / K (K even when fewer came back)",
    "R@K": "relevant ids in the prefix / |R|",
    "RR@K": "1 / rank of the first relevant id in the prefix, 0 if none",
    "AP@K": "sum of P@i over the ranks i <= K of relevant ids, / |R| (truncated AP)",
    "nDCG@K": "DCG@K / IDCG@K; gain 2^grade - 1, discount log2(i + 1); IDCG@K over the query's judged grades "
              "sorted in descending order, cut at K",
    "judged@K": "judged ids in the prefix / ids in the prefix",
    "P_upper@K": "(relevant + unjudged ids in the prefix) / K: P@K if every unjudged id were relevant",
    "undefined": "None: R@K, RR@K, AP@K, nDCG@K when |R| = 0; judged@K for an empty prefix; a query with "
                 "|R| > 0 and an empty ranking scores 0",
    "aggregate": "mean over the queries where the measure is defined; 'queries' = their number",
}
"""The conventions every :class:`RunEvaluation` states (tools differ on each of them)."""

RUN_COLUMNS = ("qid", "docid")
"""The columns a run frame needs, besides ``score`` or ``rank`` or both (``ranking.run_file.read_run``'s
table has both)."""
QRELS_COLUMNS = ("qid", "docid", "grade")
"""The columns a qrels frame needs: one row per judged (query, document)."""


@dataclass(frozen=True)
class RunEvaluation:
    """What :func:`evaluate_run` returns.

    ``per_query``: one row per (query, K), queries in the order of the qrels, then K ascending:
    ``qid``, ``K``, ``retrieved`` (ids in the prefix), ``relevant`` (|R|), then the measures of
    :data:`MEASURE_NAMES` (null where undefined). ``aggregate``: one row per (K, measure) in
    :data:`MEASURE_NAMES` order: ``K``, ``measure``, ``mean`` (over the queries where it is
    defined, null when none is) and ``queries`` (how many contributed). ``conventions``:
    :data:`CONVENTIONS`.
    """

    per_query: pl.DataFrame
    aggregate: pl.DataFrame
    conventions: Mapping[str, str] = field(default_factory=lambda: dict(CONVENTIONS))


def ranked_metrics(ranking: Sequence[str], judgments: Mapping[str, int], k: int) -> dict[str, float | None]:
    """The measures of :data:`MEASURE_NAMES` of one ranked list at cutoff ``k`` (module docstring
    for each formula; None where undefined).

    ``ranking``: document ids (str) best first, each once; ``judgments``: id -> grade (an integer
    in 0..GRADE_BOUND, relevant when > 0); an id without a grade is unjudged. ValueError, one line naming
    the item and the rule: ``k`` not an integer >= 1, a ranking that is not a sequence of str ids
    or repeats one, a grade that is not such an integer (a bool, 1.5, "2").
    """
    cutoffs = _cutoffs(k, single=True)
    run = _run_from_mapping({"": ranking}, lambda _: "ranking")
    qrels, queries = _qrels_from_mapping({"": judgments}, lambda _: "judgments")
    row = _evaluate(run, qrels, queries, cutoffs).row(0, named=True)
    return {name: row[name] for name in MEASURE_NAMES}


def evaluate_run(
    run: Mapping[str, Sequence[str]] | pl.DataFrame,
    qrels: Mapping[str, Mapping[str, int]] | pl.DataFrame,
    k: int | Sequence[int],
) -> RunEvaluation:
    """:func:`ranked_metrics` of every query of ``qrels`` at each cutoff of ``k``, and their means
    (like ir_measures' ``calc_aggregate``), as a :class:`RunEvaluation`.

    ``run``: query id -> ranking (ids best first), or a run frame (:data:`RUN_COLUMNS` and ``score``
    or ``rank``, such as ``ranking.run_file.read_run`` returns), ordered by :func:`run_order`.
    ``qrels``: query id -> {document id: grade} (``datasets.traces.read_qrels``), or a frame of
    :data:`QRELS_COLUMNS`.
    ``k``: one cutoff or several (integers >= 1). A query of the qrels the run does not rank scores
    as an empty ranking; a query of the run without judgments is refused (its labels do not match).
    ValueError, one line naming the query, the item and the rule, for any input
    :func:`ranked_metrics` refuses, a frame lacking a column or holding a null, or a repeated
    (query, document) judgment.
    """
    cutoffs = _cutoffs(k, single=False)
    if isinstance(run, pl.DataFrame):
        run_long = _run_from_frame(run)
    else:
        run_long = _run_from_mapping(run, lambda query: f"run[{query!r}]")
    qrels_long, queries = (_qrels_from_frame(qrels) if isinstance(qrels, pl.DataFrame)
                           else _qrels_from_mapping(qrels, lambda query: f"qrels[{query!r}]"))
    unknown = run_long.select("qid").unique(maintain_order=True).join(queries.to_frame(), on="qid", how="anti")
    if unknown.height:
        raise ValueError(f"run query {unknown['qid'][0]!r} has no judgments in the qrels ({unknown.height} such "
                         "queries): every query of the run needs its judgments")
    per_query = _evaluate(run_long, qrels_long, queries, cutoffs)
    return RunEvaluation(per_query, aggregate(per_query))


def aggregate(per_query: pl.DataFrame) -> pl.DataFrame:
    """``K, measure, mean, queries`` of a :class:`RunEvaluation`'s ``per_query`` table: per K and
    measure, the mean over the queries where the measure is defined (not null) and their number."""
    return (
        per_query.unpivot(list(MEASURE_NAMES), index="K", variable_name="measure")
        .group_by("K", "measure", maintain_order=True)
        .agg(mean=pl.col("value").mean(), queries=pl.col("value").count().cast(pl.Int64))
        .sort("K", maintain_order=True)
    )


def run_order(run: pl.DataFrame) -> pl.DataFrame:
    """``run`` (a run frame: :data:`RUN_COLUMNS` and ``score`` or ``rank`` or both) sorted by query,
    then by descending ``score``, ties by ascending ``rank``, then by row order (a run file's line
    order): the order in which a run ranks each query's documents."""
    by = [column for column in ("qid", "score", "rank") if column in run.columns]
    return run.sort(by, descending=[column == "score" for column in by], maintain_order=True)


def _cutoffs(k: object, *, single: bool) -> list[int]:
    """The sorted distinct cutoffs of ``k`` (an integer >= 1, or with ``single`` False a non-empty
    sequence of them); ValueError otherwise."""
    several = isinstance(k, (Sequence, np.ndarray)) and not isinstance(k, str)
    values = list(k) if several and not single else [k]
    if not values:
        raise ValueError("k = []: give at least one cutoff")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"k = {value!r}: a cutoff must be an integer >= 1")
    return sorted({int(value) for value in values})


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _first_refused(values: list, accept: Callable[[type], bool]) -> int | None:
    """Index of the first of ``values`` whose type ``accept`` refuses, None when it accepts every
    one: a pass over the distinct types first, so valid input costs no Python loop of its own."""
    if all(accept(kind) for kind in set(map(type, values))):
        return None
    return next(i for i, value in enumerate(values) if not accept(type(value)))


def _is_id(kind: type) -> bool:
    return issubclass(kind, str)


def _is_grade(kind: type) -> bool:
    return issubclass(kind, numbers.Integral) and not issubclass(kind, bool)


def _flattened(mapping: object, name: str, label: Callable[[str], str], value_kind: type, value_rule: str
               ) -> tuple[list[str], np.ndarray, pl.Series]:
    """(query ids, offset of each query's first item, the query id of every item) of ``mapping``
    (called ``name``; its value of query q called ``label(q)``) after checking it is a mapping of
    str keys to ``value_kind`` values; its items are the values' own items, query after query."""
    if not isinstance(mapping, Mapping):
        raise ValueError(f"{name} is a {type(mapping).__name__}: expected a mapping query id -> {value_rule}")
    queries = list(mapping)
    for query in queries:
        value = mapping[query]
        if not isinstance(query, str):
            raise ValueError(f"{name} key {query!r}: query ids must be str")
        if isinstance(value, (str, bytes)) or not isinstance(value, value_kind):
            raise ValueError(f"{label(query)} is a {type(value).__name__}: expected {value_rule}")
    lengths = np.fromiter((len(mapping[q]) for q in queries), np.int64, len(queries))
    owners = pl.Series(np.repeat(np.array(queries, dtype=object), lengths), dtype=pl.String)
    return queries, np.cumsum(lengths) - lengths, owners


def _owner(offsets: np.ndarray, index: int) -> tuple[int, int]:
    """(query, position in its list) of item ``index`` of lists flattened with start ``offsets``."""
    owner = int(np.searchsorted(offsets, index, side="right")) - 1
    return owner, index - int(offsets[owner])


def _run_from_mapping(run: Mapping[str, Sequence[str]], label: Callable[[str], str]) -> pl.DataFrame:
    """``qid, docid, position`` (1-based) of a mapping query id -> ranking, checked (module docstring)."""
    queries, offsets, owners = _flattened(run, "run", label, Sequence, "a sequence of document ids")
    docids = list(chain.from_iterable(run[q] for q in queries))
    bad = _first_refused(docids, _is_id)
    if bad is not None:
        owner, position = _owner(offsets, bad)
        raise ValueError(f"{label(queries[owner])}[{position}] = {docids[bad]!r}: a ranking holds document ids (str)")
    frame = pl.DataFrame({"qid": owners, "docid": pl.Series(docids, dtype=pl.String)}).with_columns(
        position=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("qid"))
    repeated = frame.filter(pl.struct("qid", "docid").is_duplicated())
    if repeated.height:
        first = repeated.row(0, named=True)
        again = repeated.filter((pl.col("qid") == first["qid"]) & (pl.col("docid") == first["docid"]))["position"]
        raise ValueError(f"{label(first['qid'])}[{again[1] - 1}] = {first['docid']!r}: repeated id (first at "
                         f"{label(first['qid'])}[{again[0] - 1}]); a ranking holds each id once")
    return frame


def _qrels_from_mapping(qrels: Mapping[str, Mapping[str, int]], label: Callable[[str], str]
                        ) -> tuple[pl.DataFrame, pl.Series]:
    """(``qid, docid, grade``, the query ids) of a mapping query id -> {document id: grade}, checked
    (module docstring)."""
    queries, offsets, owners = _flattened(qrels, "qrels", label, Mapping, "a mapping document id -> grade")
    docids = list(chain.from_iterable(qrels[q].keys() for q in queries))
    grades = list(chain.from_iterable(qrels[q].values() for q in queries))
    bad = _first_refused(docids, _is_id)
    if bad is not None:
        raise ValueError(f"{label(queries[_owner(offsets, bad)[0]])} key {docids[bad]!r}: document ids are str")
    bad = _first_refused(grades, _is_grade)
    if bad is None:
        try:
            grade = pl.Series(grades, dtype=pl.Int64)
            outside = ((grade < 0) | (grade > GRADE_BOUND)).to_numpy()
            bad = _first(outside) if outside.any() else None
        except (TypeError, OverflowError):  # an integer beyond int64
            bad = next(i for i, g in enumerate(grades) if not 0 <= g <= GRADE_BOUND)
    if bad is not None:
        raise ValueError(f"{label(queries[_owner(offsets, bad)[0]])}[{docids[bad]!r}] = {grades[bad]!r}: a grade "
                         f"is an integer in 0..{GRADE_BOUND} (relevant when > 0; not a bool, a float or a str)")
    return (pl.DataFrame({"qid": owners, "docid": pl.Series(docids, dtype=pl.String), "grade": grade}),
            pl.Series("qid", queries, dtype=pl.String))


def _require(frame: pl.DataFrame, name: str, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} frame lacks the column(s) {missing}: expected {list(columns)}")
    for column in columns:
        nulls = frame[column].null_count()
        if nulls:
            row = _first(frame[column].is_null().to_numpy())
            raise ValueError(f"{name} frame row {row}: {column} is null ({nulls} such rows)")
    for column in ("qid", "docid"):
        if frame.schema[column] != pl.String:
            raise ValueError(f"{name} frame column {column} is {frame.schema[column]}: ids are str (String)")


def _refuse_repeats(frame: pl.DataFrame, name: str, rule: str) -> None:
    repeated = frame.with_row_index("row").filter(pl.struct("qid", "docid").is_duplicated())
    if repeated.height:
        first = repeated.row(0, named=True)
        rows = repeated.filter((pl.col("qid") == first["qid"]) & (pl.col("docid") == first["docid"]))["row"]
        raise ValueError(f"{name} frame rows {rows[0]} and {rows[1]}: document {first['docid']!r} of query "
                         f"{first['qid']!r} is repeated; {rule}")


def _run_from_frame(run: pl.DataFrame) -> pl.DataFrame:
    """``qid, docid, position`` of a run frame in :func:`run_order`, checked."""
    order = [column for column in ("score", "rank") if column in run.columns]
    if not order:
        raise ValueError(f"run frame lacks both score and rank: one of them orders the documents (columns "
                         f"{run.columns})")
    _require(run, "run", (*RUN_COLUMNS, *order))
    for column in order:
        if not run.schema[column].is_numeric():
            raise ValueError(f"run frame column {column} is {run.schema[column]}: expected numbers")
    _refuse_repeats(run, "run", "a ranking holds each id once")
    return (run_order(run).select("qid", "docid")
            .with_columns(position=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("qid")))


def _qrels_from_frame(qrels: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """(``qid, docid, grade`` (Int64), the query ids in order of appearance) of a qrels frame, checked."""
    _require(qrels, "qrels", QRELS_COLUMNS)
    if not qrels.schema["grade"].is_integer():
        raise ValueError(f"qrels frame column grade is {qrels.schema['grade']}: grades are integers in "
                         f"0..{GRADE_BOUND} (not a bool, a float or a str)")
    outside = qrels.with_row_index("row").filter((pl.col("grade") < 0) | (pl.col("grade") > GRADE_BOUND))
    if outside.height:
        raise ValueError(f"qrels frame row {outside['row'][0]}: grade {outside['grade'][0]} is not in "
                         f"0..{GRADE_BOUND} (relevant when > 0)")
    _refuse_repeats(qrels, "qrels", "each (query, document) is judged once")
    frame = qrels.select(*QRELS_COLUMNS).cast({"grade": pl.Int64})
    return frame, frame["qid"].unique(maintain_order=True)


def _evaluate(run: pl.DataFrame, qrels: pl.DataFrame, queries: pl.Series, cutoffs: list[int]) -> pl.DataFrame:
    """The ``per_query`` table of :class:`RunEvaluation` of the ``queries`` of checked long frames
    ``run`` (qid, docid, position: 1.. in each query's order) and ``qrels`` (qid, docid, grade)."""
    positives = qrels.filter(pl.col("grade") > 0).group_by("qid").agg(ideal="grade")
    judged_queries = (queries.to_frame("qid").join(positives, on="qid", how="left", maintain_order="left")
                      .with_columns(pl.col("ideal").fill_null(pl.lit([], pl.List(pl.Int64)))))
    relevant = judged_queries["ideal"].list.len().to_numpy().astype(np.float64)
    tables = []
    for k in cutoffs:
        top = (run.filter(pl.col("position") <= k)
               .join(qrels, on=["qid", "docid"], how="left", maintain_order="left")
               .group_by("qid", maintain_order=True)
               .agg(grades=pl.col("grade").fill_null(0), judged=pl.col("grade").count(), retrieved=pl.len()))
        lists = judged_queries.join(top, on="qid", how="left", maintain_order="left").with_columns(
            pl.col("grades").fill_null(pl.lit([], pl.List(pl.Int64))), pl.col("judged", "retrieved").fill_null(0))
        in_k = lists["grades"].list.eval((pl.element() > 0).cast(pl.Int64))
        hits = in_k.list.sum().to_numpy().astype(np.float64)
        judged = lists["judged"].to_numpy().astype(np.float64)
        retrieved = lists["retrieved"].to_numpy().astype(np.float64)
        cut = np.full(lists.height, k, np.int64)
        with np.errstate(invalid="ignore"):  # 0 / 0 = NaN (undefined) where |R| = 0 or nothing came back
            r_at_k, judged_share = recall(hits, relevant), judged / retrieved
        values = {
            "P@K": precision(hits, cut),
            "R@K": r_at_k,
            "RR@K": reciprocal_rank_at_k(in_k, relevant),
            "AP@K": average_precision_at_k(in_k, relevant),
            "nDCG@K": graded_ndcg_at_k(lists["grades"], lists["ideal"], cut),
            "judged@K": judged_share,
            "P_upper@K": precision(hits + retrieved - judged, cut),
        }
        tables.append(lists.select(
            "qid", K=pl.lit(k, pl.Int64), retrieved=pl.col("retrieved").cast(pl.Int64),
            relevant=pl.Series(relevant.astype(np.int64)),
            **{name: pl.Series(value, dtype=pl.Float64).fill_nan(None) for name, value in values.items()},
        ).with_row_index("_query"))
    return pl.concat(tables).sort("_query", "K", maintain_order=True).drop("_query")
