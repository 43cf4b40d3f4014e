"""The LLM judge checked against gold answers (docs/METHODS.md#judge-against-gold-answers).

Input: the analysis table (``results/analysis/graded.parquet``) with ``id, Np, grade`` and the
answer scores ``answer_f1, answer_recall, answer_contains, ideal_f1, ideal_contains`` (each
optional: a missing column counts as null), the judge's other grades (:data:`SCORES`:
``grade_expected`` and the gold-reference ``grade_gold``, ``grade_gold_expected``) optional,
``subset`` optional (else ``id.split('-')[0]`` as in the analysis). Each statistic counts the
samples where both of its columns are not null.

Output (``results/analysis/judge_agreement.parquet``), one row per subset with a sample or an
ideal answer scored against gold answers, then ``subset = "all"``:

- ``n_samples``: samples with a grade and an ``answer_f1``; ``n_queries``: their distinct query ids;
- ``spearman``: Spearman's rho between the grade and the F1 level (:func:`~.answer_scores.f1_level`:
  F1 = 0 -> 1, (0, .25] -> 2, (.25, .5] -> 3, (.5, .75] -> 4, (.75, 1] -> 5);
- ``n_contains``: samples with a grade and an ``answer_contains``;
- ``auc_<score>`` for each score of :data:`SCORES` (``auc_grade``, ``auc_grade_expected``,
  ``auc_grade_gold``, ``auc_grade_gold_expected``): ROC AUC of the score separating the answers
  that contain a gold answer from those that do not, P(score of a containing answer > score of
  another) + P(equal) / 2 (Mann-Whitney), the value of ``sklearn.metrics.roc_auc_score`` with
  each sample weighted by its query's multiplicity (the tests check it against that function);
  computed from per-query score x containment counts so that the bootstrap's resamples cost one
  sparse product, not one sort each;
- ``spearman_recall_<score>`` for each score: Spearman's rho between the score and ``answer_recall``;
- ``ideal_f1``: mean token F1 of the ideal answers, ``ideal_contains``: share of ideal answers
  containing a gold answer, one ideal answer per (id, Np);
- ``<statistic>_ci_low, <statistic>_ci_high``: percentile bootstrap intervals (``confidence``) over
  query ids, resampled within subsets (the analysis' bootstrap,
  :mod:`retrieval_response.analysis.bootstrap`); the ``all`` row uses the same draws. A resample
  counts every sample of a drawn query with the query's multiplicity.

Undefined values (no sample, a constant score, no answer on one side of the AUC, no resample)
are null. Krippendorff's alpha between the grade and the F1 level is not reported: it asks
whether the two scales agree in level, and a sentence-long answer scores a low F1 against a
one-word gold answer however right it is, so alpha measures the answers' length, not the judge.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import sparse

from retrieval_response.agreement.human_llm import GRADE_RANGE
from retrieval_response.analysis.answer_scores import f1_level
from retrieval_response.analysis.bootstrap import percentile_interval, resample_weights, resampled_tables
from retrieval_response.analysis.correlations import table_correlations
from retrieval_response.analysis.sample_correlations import sample_correlations
from retrieval_response.analysis.segments import with_subset_and_level
from retrieval_response.analysis.targets import JUDGE_GRADES, TARGETS
from retrieval_response.infra.errors import InputError

ALL = "all"
LEVELS = np.arange(GRADE_RANGE[0], GRADE_RANGE[1] + 1, dtype=np.float64)
SCORES = JUDGE_GRADES
"""The judge's grades checked against the judge-free targets (the registry's judge grades)."""
STATISTICS = (
    "spearman", *(f"auc_{score}" for score in SCORES), *(f"spearman_recall_{score}" for score in SCORES),
    "ideal_f1", "ideal_contains",
)
"""Statistics with a bootstrap interval, in column order."""
SCHEMA = {
    "subset": pl.String, "n_samples": pl.Int64, "n_queries": pl.Int64, "n_contains": pl.Int64,
    **{f"{name}{suffix}": pl.Float64 for name in STATISTICS for suffix in ("", "_ci_low", "_ci_high")},
}
_COLUMNS = {**{name: target.dtype for name, target in TARGETS.items()},
            "ideal_f1": pl.Float64, "ideal_contains": pl.Float64}


def judged_samples(graded: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(samples ``id, subset, <SCORES>, level, answer_recall, answer_contains``; ideal answers
    ``id, subset, ideal_f1, ideal_contains``), every score as a number or null.

    ``level`` is the F1 level of ``answer_f1``; ``answer_contains`` is 0/1. Samples are those with
    a grade or an expected grade and some answer score; ideal answers are one per (id, Np) with an
    ``ideal_f1`` or an ``ideal_contains``. A table without the score columns has no gold answers:
    both are empty. InputError for a grade or gold grade outside 1..5.
    """
    samples = with_subset_and_level(graded)
    samples = samples.with_columns(
        (pl.col(c).cast(dtype) if c in samples.columns else pl.lit(None, dtype=dtype)).alias(c)
        for c, dtype in _COLUMNS.items()
    )
    for grade in ("grade", "grade_gold"):
        outside = samples.filter(pl.col(grade).is_not_null() & ~pl.col(grade).is_between(*GRADE_RANGE))
        if outside.height:
            raise InputError("graded table", f"id {outside['id'][0]}",
                             f"{grade} {outside[grade][0]}: grades run from 1 to 5")
    judged = samples.filter(
        pl.any_horizontal(pl.col(SCORES).is_not_null())
        & pl.any_horizontal(pl.col("answer_f1", "answer_recall", "answer_contains").is_not_null())
    ).select("id", "subset", *SCORES, f1_level(pl.col("answer_f1")).cast(pl.Int64).alias("level"),
             "answer_recall", "answer_contains")
    ideal = samples.filter(pl.any_horizontal(pl.col("ideal_f1", "ideal_contains").is_not_null())).unique(
        ["id", "Np"], keep="first", maintain_order=True
    ).select("id", "subset", "ideal_f1", "ideal_contains")
    return judged, ideal


def group_matrix(group: np.ndarray, n_groups: int) -> np.ndarray:
    """(len(group), n_groups + 1) indicator: column g marks members of group g, the last column everyone."""
    indicator = np.zeros((len(group), n_groups + 1))
    indicator[np.arange(len(group)), group] = 1.0
    indicator[:, -1] = 1.0
    return indicator


def level_spearman(weights: np.ndarray, grade: np.ndarray, level: np.ndarray, query: np.ndarray, subset: np.ndarray,
                   n_subsets: int) -> tuple[np.ndarray, np.ndarray]:
    """(spearman, samples) per weight row x (subsets..., all), from grade x F1-level count tables."""
    pair = (grade - 1) * len(LEVELS) + level - 1
    tables = resampled_tables(weights, query, subset[query], pair, n_subsets, len(LEVELS) ** 2)
    tables = np.concatenate([tables, tables.sum(axis=1, keepdims=True)], axis=1)
    grids = tables.reshape(-1, len(LEVELS), len(LEVELS))
    spearman = table_correlations(LEVELS[None, :], grids, LEVELS, ("spearman",))["spearman"][:, 0]
    return spearman.reshape(tables.shape[:2]), tables.sum(axis=-1)


def roc_auc(weights: np.ndarray, score: np.ndarray, positive: np.ndarray, query: np.ndarray, subset: np.ndarray,
            n_subsets: int) -> np.ndarray:
    """ROC AUC per weight row x (subsets..., all): sum over positive i, negative j of w_i w_j
    ([s_i > s_j] + [s_i = s_j] / 2) over (sum of positive w)(sum of negative w), w = the sample's
    query multiplicity; NaN without a positive or a negative."""
    out = np.full((weights.shape[0], n_subsets + 1), np.nan)
    if len(score) == 0:
        return out
    values, index = np.unique(score, return_inverse=True)
    shape = (weights.shape[1], len(values))
    counts = [sparse.csr_matrix((np.ones(mask.sum()), (query[mask], index[mask])), shape=shape)
              for mask in (positive, ~positive)]
    members = group_matrix(subset, n_subsets)
    for g in range(n_subsets + 1):
        table_weights = weights * members[:, g]
        pos, neg = (np.asarray((c.T @ table_weights.T).T) for c in counts)  # (T, values) ascending scores
        below = np.cumsum(neg, axis=1) - neg
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, g] = (pos * (below + neg / 2)).sum(axis=1) / (pos.sum(axis=1) * neg.sum(axis=1))
    return out


def rank_correlation(weights: np.ndarray, score: np.ndarray, target: np.ndarray, query: np.ndarray,
                     subset: np.ndarray, n_subsets: int) -> np.ndarray:
    """Spearman's rho of score and target per weight row x (subsets..., all), each sample repeated
    its query's multiplicity (scipy's midranks; NaN when either side is constant)."""
    out = np.full((weights.shape[0], n_subsets + 1), np.nan)
    if len(score) < 2:
        return out
    values, cell = np.unique(score, return_inverse=True)
    members = group_matrix(subset, n_subsets)
    for g in range(n_subsets + 1):
        out[:, g] = sample_correlations(values[None, :], cell, target, query, weights * members[:, g],
                                        ("spearman",))["spearman"][:, 0]
    return out


def weighted_means(weights: np.ndarray, values: np.ndarray, query: np.ndarray, subset: np.ndarray,
                   n_subsets: int) -> np.ndarray:
    """Mean of ``values`` per weight row x (subsets..., all): weighted sum over weighted count."""
    n_queries = weights.shape[1]
    total = np.bincount(query, weights=values, minlength=n_queries)
    count = np.bincount(query, minlength=n_queries).astype(np.float64)
    members = group_matrix(subset, n_subsets)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (weights @ (total[:, None] * members)) / (weights @ (count[:, None] * members))


def judge_agreement(graded: pl.DataFrame, *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> pl.DataFrame:
    """The judge-agreement table of the module docstring (SCHEMA), empty when no sample has a gold answer."""
    judged, ideal = judged_samples(graded)
    queries = pl.concat([judged.select("id", "subset"), ideal.select("id", "subset")]).unique("id").sort("id")
    if queries.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    subsets = sorted(queries["subset"].unique().to_list())
    queries = queries.with_columns(
        q=pl.int_range(pl.len(), dtype=pl.Int64),
        s=pl.col("subset").replace_strict(subsets, range(len(subsets)), return_dtype=pl.Int64),
    )
    subset_of_query = queries["s"].to_numpy()
    weights = np.vstack([np.ones((1, queries.height)), resample_weights(subset_of_query, resamples, seed)])
    groups = (subset_of_query, len(subsets))

    def having(frame: pl.DataFrame, *columns: str) -> tuple[pl.DataFrame, np.ndarray]:
        part = frame.drop_nulls(list(columns))
        return part, part.join(queries.select("id", "q"), on="id", how="left", maintain_order="left")["q"].to_numpy()

    leveled, query = having(judged, "grade", "level")
    spearman, samples = level_spearman(weights, leveled["grade"].to_numpy(), leveled["level"].to_numpy(), query, *groups)
    statistics = {"spearman": spearman}
    for score in SCORES:
        part, query = having(judged, score, "answer_contains")
        statistics[f"auc_{score}"] = roc_auc(weights, part[score].to_numpy().astype(np.float64),
                                             part["answer_contains"].to_numpy() > 0, query, *groups)
        if score == "grade":
            n_contains = np.append(np.bincount(subset_of_query[query], minlength=len(subsets)), len(query))
    for score in SCORES:
        part, query = having(judged, score, "answer_recall")
        statistics[f"spearman_recall_{score}"] = rank_correlation(
            weights, part[score].to_numpy().astype(np.float64), part["answer_recall"].to_numpy(), query, *groups)
    for column in ("ideal_f1", "ideal_contains"):
        part, query = having(ideal, column)
        statistics[column] = weighted_means(weights, part[column].to_numpy(), query, *groups)
    n_queries = np.append(
        [leveled.filter(pl.col("subset") == name)["id"].n_unique() for name in subsets], leveled["id"].n_unique()
    )
    columns = {"subset": [*subsets, ALL], "n_samples": samples[0].astype(np.int64), "n_queries": n_queries.astype(np.int64),
               "n_contains": n_contains.astype(np.int64)}
    for name in STATISTICS:
        low, high = percentile_interval(statistics[name][1:].T, confidence)
        columns |= {name: statistics[name][0], f"{name}_ci_low": low, f"{name}_ci_high": high}
    table = pl.DataFrame(columns).select(list(SCHEMA)).cast(SCHEMA)
    return table.with_columns(pl.col(pl.Float64).fill_nan(None))


def no_gold_reason(graded: pl.DataFrame) -> str:
    """Why the judge-agreement table of ``graded`` is empty, in one line."""
    if "answer_f1" not in graded.columns:
        return "the graded table has no answer scores (published files or an older table): no gold answers to compare"
    return "no graded sample's query has a gold answer (the texts tables' 'answers' are all empty)"
