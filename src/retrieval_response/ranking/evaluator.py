"""Ranked-list metrics with incomplete, possibly graded judgments (docs/METHODS.md#ranked-list-metric-contract).

The evaluator contract, stated in every output through :func:`conventions`:

- the ranking is cut to its first ``k`` ids, in the order given (ties are never
  reordered); a repeated id anywhere in the ranking is an error;
- an unjudged id counts as not relevant; beside the point estimate come the judged
  fraction of the prefix and the optimistic precision (every unjudged id relevant);
- relevant means ``grade >= relevance_level``; ``|R|`` is the number of known relevant ids;
- P@k divides by ``k``; R@k and AP@k divide by ``|R|``; DCG uses gain ``2^grade - 1`` and
  discount ``log2(i + 1)``, the ideal DCG sorts the known grades at the same cutoff;
- undefined values are ``None`` (never 0), and :func:`aggregate` says how many
  queries contributed to each mean.

Differences from trec_eval (and ``ir_measures``, which wraps it): trec_eval's ``ndcg_cut``
uses the grade itself as gain (equal to ours on binary judgments; ``ir_measures``'
``nDCG(gains={g: 2**g - 1})@k`` equals ours on graded ones); trec_eval re-sorts a run by
score and breaks ties by document id, while here the given order is final; trec_eval scores
a query without relevant documents 0 where this module says ``None``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from retrieval_response.analysis.measures import RANKED_LIST_MEASURES

METRIC_NAMES: tuple[str, ...] = RANKED_LIST_MEASURES
"""The registry's ranked-list measures (analysis.measures.MEASURES), the keys of every result."""

_CONVENTIONS: dict[str, str] = {
    "truncation": "the first k ids of the ranking in the order given; ties are never reordered; "
    "a repeated id is an error",
    "relevant": "grade >= relevance_level; |R| = number of known relevant ids",
    "unjudged": "counted as not relevant; judged_fraction = judged ids / ids in the prefix; "
    "precision_upper_bound counts every unjudged id as relevant",
    "precision": "relevant ids in the prefix / k (denominator k even when fewer came back)",
    "recall": "relevant ids in the prefix / |R|",
    "reciprocal_rank": "1 / rank of the first relevant id within k, 0 if none",
    "average_precision": "sum of P@i over relevant ranks i <= k, divided by |R| (truncated AP)",
    "gain": "2^grade - 1",
    "discount": "log2(i + 1), i = 1..k",
    "ndcg": "DCG@k / DCG@k of the known grades sorted in descending order",
    "bpref": "Buckley & Voorhees 2004 as in trec_eval: (1/|R|) * sum over relevant ids in the "
    "prefix of 1 - min(judged non-relevant ranked above, |R|) / min(|N|, |R|); "
    "|N| = judged ids with grade < relevance_level",
    "undefined": "recall, reciprocal_rank, average_precision and bpref are null when |R| = 0; "
    "ndcg is null when no known grade is above 0; judged_fraction is null for an empty prefix",
}


def conventions() -> dict[str, str]:
    """Return the metric conventions (gain, discount, unjudged handling, truncation ...).

    Every output of :func:`ranked_metrics`, :func:`evaluate_run` and :func:`aggregate`
    carries this dict under the key ``"conventions"``.
    """
    return dict(_CONVENTIONS)


def _where(query_id: str | None) -> str:
    return f"query {query_id!r}: " if query_id is not None else ""


def _check_positive_int(value: object, name: str, query_id: str | None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{_where(query_id)}{name} = {value!r}: must be an integer >= 1")
    return int(value)


def _check_ranking(ranking: Sequence[str], query_id: str | None) -> None:
    if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
        raise ValueError(
            f"{_where(query_id)}ranking = {ranking!r}: must be a sequence of string ids"
        )
    first_seen: dict[str, int] = {}
    for position, doc_id in enumerate(ranking):
        if not isinstance(doc_id, str):
            raise ValueError(f"{_where(query_id)}ranking[{position}] = {doc_id!r}: ids must be strings")
        if doc_id in first_seen:
            raise ValueError(
                f"{_where(query_id)}ranking[{position}] = {doc_id!r}: repeated id "
                f"(first at ranking[{first_seen[doc_id]}]); each id may appear once"
            )
        first_seen[doc_id] = position


def _check_qrels(qrels: Mapping[str, int], query_id: str | None) -> None:
    if not isinstance(qrels, Mapping):
        raise ValueError(f"{_where(query_id)}qrels = {qrels!r}: must be a mapping id -> grade")
    for doc_id, grade in qrels.items():
        if not isinstance(doc_id, str):
            raise ValueError(f"{_where(query_id)}qrels key {doc_id!r}: ids must be strings")
        if isinstance(grade, bool) or not isinstance(grade, numbers.Integral) or grade < 0:
            raise ValueError(
                f"{_where(query_id)}qrels[{doc_id!r}] = {grade!r}: grades must be integers >= 0"
            )


def _dcg(gains: np.ndarray) -> float:
    """DCG = sum_i gains[i-1] / log2(i + 1), i = 1..len(gains)."""
    return float(np.sum(gains / np.log2(np.arange(2, gains.size + 2))))


def _bpref(is_relevant: np.ndarray, is_judged_nonrelevant: np.ndarray, n_relevant: int,
           n_nonrelevant: int) -> float:
    """trec_eval's bpref over a prefix (see :func:`conventions`)."""
    nonrelevant_above = np.cumsum(is_judged_nonrelevant)[is_relevant]
    denominator = max(min(n_nonrelevant, n_relevant), 1)  # only used where nonrelevant_above > 0
    penalties = np.where(
        nonrelevant_above > 0, np.minimum(nonrelevant_above, n_relevant) / denominator, 0.0
    )
    return float(np.sum(1.0 - penalties) / n_relevant)


def ranked_metrics(
    ranking: Sequence[str],
    qrels: Mapping[str, int],
    k: int,
    *,
    relevance_level: int = 1,
    query_id: str | None = None,
) -> dict:
    """Metrics of one ranked list at cutoff ``k`` under the contract of :func:`conventions`.

    With prefix = ranking[:k], rel_i = 1 if qrels[prefix[i]] >= relevance_level (unjudged: 0),
    |R| = #{d : qrels[d] >= relevance_level}:
    precision = sum(rel)/k; precision_upper_bound = (sum(rel) + #unjudged in prefix)/k;
    recall = sum(rel)/|R|; reciprocal_rank = 1/first relevant rank (0 if none);
    average_precision = sum_i rel_i * P@i / |R|; ndcg = DCG@k / IDCG@k with gain 2^grade - 1;
    bpref as in trec_eval; judged_fraction = #judged in prefix / len(prefix).
    Undefined values are None. The result also holds ``k``, ``relevance_level``,
    ``n_retrieved`` (ids in the prefix), ``n_relevant`` (|R|) and ``conventions``.

    Raises ValueError (naming ``query_id`` when given, the item and the rule) for a cutoff
    or relevance level that is not an integer >= 1, a grade that is not an integer >= 0,
    an id that is not a string, or an id repeated in the ranking.
    """
    k = _check_positive_int(k, "k", query_id)
    relevance_level = _check_positive_int(relevance_level, "relevance_level", query_id)
    _check_ranking(ranking, query_id)
    _check_qrels(qrels, query_id)

    prefix = ranking[:k]
    grades = np.fromiter((qrels.get(doc_id, -1) for doc_id in prefix), dtype=np.int64,
                         count=len(prefix))
    known_grades = np.fromiter(qrels.values(), dtype=np.int64, count=len(qrels))
    is_judged = grades >= 0
    is_relevant = grades >= relevance_level
    n_relevant = int(np.count_nonzero(known_grades >= relevance_level))
    n_nonrelevant = len(qrels) - n_relevant
    n_hits = int(np.count_nonzero(is_relevant))
    ranks = np.arange(1, len(prefix) + 1)

    ideal_dcg = _dcg(np.exp2(np.sort(known_grades)[::-1][:k]) - 1.0)
    defined = n_relevant > 0
    result = {
        "P@K": n_hits / k,
        "P_upper@K": (n_hits + int(np.count_nonzero(~is_judged))) / k,
        "R@K": n_hits / n_relevant if defined else None,
        "RR@K": (1.0 / int(ranks[is_relevant][0]) if n_hits else 0.0) if defined else None,
        "AP@K": (
            float(np.sum(np.cumsum(is_relevant)[is_relevant] / ranks[is_relevant])) / n_relevant
            if defined else None
        ),
        "nDCG@K": (
            _dcg(np.exp2(np.maximum(grades, 0)) - 1.0) / ideal_dcg if ideal_dcg > 0 else None
        ),
        "bpref@K": (
            _bpref(is_relevant, is_judged & ~is_relevant, n_relevant, n_nonrelevant)
            if defined else None
        ),
        "judged@K": float(np.mean(is_judged)) if len(prefix) else None,
    }
    return result | {
        "k": k,
        "relevance_level": relevance_level,
        "n_retrieved": len(prefix),
        "n_relevant": n_relevant,
        "conventions": conventions(),
    }


def evaluate_run(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    k: int,
    *,
    relevance_level: int = 1,
) -> dict[str, dict]:
    """:func:`ranked_metrics` for every query of ``qrels``: query id -> metrics dict.

    A query of ``qrels`` missing from ``run`` is scored as an empty result list. A query
    of ``run`` that ``qrels`` does not know is a label mismatch: ValueError naming it.
    """
    unknown = sorted(set(run) - set(qrels), key=str)
    if unknown:
        raise ValueError(
            f"query {unknown[0]!r}: in the run but not in the qrels "
            f"({len(unknown)} such queries); every run query needs judgments"
        )
    return {
        query_id: ranked_metrics(run.get(query_id, ()), judgments, k,
                                 relevance_level=relevance_level, query_id=query_id)
        for query_id, judgments in qrels.items()
    }


def aggregate(per_query: Iterable[dict]) -> dict:
    """Mean of each metric over the queries where it is defined.

    Returns, for each name in METRIC_NAMES, ``<name>`` = mean over the per-query values
    that are not None (None when no query contributes) and ``n_<name>`` = the number of
    contributing queries; plus ``n_queries``, ``k``, ``relevance_level`` and
    ``conventions``. Raises ValueError when the queries used different ``k`` or
    ``relevance_level`` (their means would not be comparable).
    """
    rows = list(per_query)
    settings = {(row["k"], row["relevance_level"]) for row in rows}
    if len(settings) > 1:
        raise ValueError(
            f"per_query: queries use different (k, relevance_level) settings {sorted(settings)}; "
            "aggregate one setting at a time"
        )
    k, relevance_level = settings.pop() if settings else (None, None)
    values = np.array(
        [[np.nan if row[name] is None else row[name] for name in METRIC_NAMES] for row in rows],
        dtype=np.float64,
    ).reshape(len(rows), len(METRIC_NAMES))
    counts = np.count_nonzero(~np.isnan(values), axis=0)
    sums = np.nansum(values, axis=0)
    result: dict = {}
    for name, count, total in zip(METRIC_NAMES, counts, sums, strict=False):
        result[name] = float(total / count) if count else None
        result[f"n_{name}"] = int(count)
    return result | {
        "n_queries": len(rows),
        "k": k,
        "relevance_level": relevance_level,
        "conventions": conventions(),
    }
