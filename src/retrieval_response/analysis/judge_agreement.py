"""The LLM judge checked against gold answers: does the grade follow the answer's token F1?
(docs/METHODS.md#judge-against-gold-answers)

Input: the analysis table (``results/analysis/graded.parquet``) with ``id, Np, grade,
answer_f1, ideal_f1`` (``subset`` optional, else ``id.split('-')[0]`` as in the analysis).
A sample counts when it has a grade and an ``answer_f1`` (its query has a gold answer and the
top-K answer exists). Its F1 is put on the grade's five-level scale by
:func:`retrieval_response.analysis.answer_scores.f1_level`: F1 = 0 -> 1, (0, .25] -> 2, (.25, .5] -> 3,
(.5, .75] -> 4, (.75, 1] -> 5.

Output (``results/analysis/judge_agreement.parquet``), one row per subset with counted samples
or scored ideal answers, then ``subset = "all"``:

- ``n``: counted samples; ``n_queries``: their distinct query ids;
- ``spearman``: Spearman's rho between grade and F1 level (scipy's ``spearmanr`` on the
  samples: Pearson correlation of midranks);
- ``krippendorff_alpha``: Krippendorff's alpha, ordinal metric, with grade and F1 level as two
  raters of each sample; ``ci_low, ci_high`` its interval;
- ``ideal_f1``: mean token F1 of the ideal answers, one per (id, Np) with a gold answer;
- ``*_ci_low, *_ci_high``: percentile bootstrap intervals (``confidence``) over query ids,
  resampled within subsets (the analysis' bootstrap, :mod:`retrieval_response.analysis.bootstrap`);
  the ``all`` row uses the same draws.

Undefined values (no sample, a constant grade or level, no resample) are null.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from retrieval_response.analysis.agreement import GRADE_RANGE, paired_alpha_ordinal
from retrieval_response.analysis.answer_scores import f1_level
from retrieval_response.analysis.bootstrap import percentile_interval, resample_weights, resampled_tables
from retrieval_response.analysis.correlations import table_correlations
from retrieval_response.analysis.segments import with_subset_and_level
from retrieval_response.infra.errors import InputError

ALL = "all"
LEVELS = np.arange(GRADE_RANGE[0], GRADE_RANGE[1] + 1, dtype=np.float64)
SCHEMA = {
    "subset": pl.String,
    "n": pl.Int64,
    "spearman": pl.Float64,
    "spearman_ci_low": pl.Float64,
    "spearman_ci_high": pl.Float64,
    "krippendorff_alpha": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "ideal_f1": pl.Float64,
    "ideal_f1_ci_low": pl.Float64,
    "ideal_f1_ci_high": pl.Float64,
    "n_queries": pl.Int64,
}


def judged_samples(graded: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(samples ``id, subset, grade, level`` with a grade and an answer F1; ideal answers ``id, subset, ideal_f1``).

    Ideal answers are one per (id, Np) with a non-null ``ideal_f1``. A table without the
    score columns has no gold answers: both are empty. InputError for a grade outside 1..5.
    """
    samples = with_subset_and_level(graded)
    for column, dtype in (("answer_f1", pl.Float64), ("ideal_f1", pl.Float64)):
        if column not in samples.columns:
            samples = samples.with_columns(pl.lit(None, dtype=dtype).alias(column))
    judged = samples.filter(pl.col("grade").is_not_null() & pl.col("answer_f1").is_not_null()).select(
        "id", "subset", pl.col("grade").cast(pl.Int64), f1_level(pl.col("answer_f1")).cast(pl.Int64).alias("level")
    )
    outside = judged.filter(~pl.col("grade").is_between(*GRADE_RANGE))
    if outside.height:
        raise InputError("graded table", f"id {outside['id'][0]}", f"grade {outside['grade'][0]}: grades run from 1 to 5")
    ideal = samples.filter(pl.col("ideal_f1").is_not_null()).unique(["id", "Np"]).select("id", "subset", "ideal_f1")
    return judged, ideal


def group_matrix(group: np.ndarray, n_groups: int) -> np.ndarray:
    """(len(group), n_groups + 1) indicator: column g marks members of group g, the last column everyone."""
    indicator = np.zeros((len(group), n_groups + 1))
    indicator[np.arange(len(group)), group] = 1.0
    indicator[:, -1] = 1.0
    return indicator


def agreement_statistics(weights: np.ndarray, judged: pl.DataFrame, query: np.ndarray, subset: np.ndarray, n_subsets: int):
    """(spearman, alpha, samples) per weight row x (subsets..., all) from grade x level tables."""
    cell = subset[query]
    pair = (judged["grade"].to_numpy() - 1) * len(LEVELS) + judged["level"].to_numpy() - 1
    tables = resampled_tables(weights, query, cell, pair, n_subsets, len(LEVELS) ** 2)
    tables = np.concatenate([tables, tables.sum(axis=1, keepdims=True)], axis=1)
    grids = tables.reshape(-1, len(LEVELS), len(LEVELS))
    spearman = table_correlations(LEVELS[None, :], grids, LEVELS, ("spearman",))["spearman"][:, 0]
    alpha = paired_alpha_ordinal(grids)
    shape = tables.shape[:2]
    return spearman.reshape(shape), alpha.reshape(shape), tables.sum(axis=-1)


def ideal_means(weights: np.ndarray, ideal: pl.DataFrame, query: np.ndarray, subset: np.ndarray, n_subsets: int):
    """Mean ideal F1 per weight row x (subsets..., all): sum of weighted F1 over weighted count of ideal answers."""
    n_queries = weights.shape[1]
    f1_sum = np.bincount(query, weights=ideal["ideal_f1"].to_numpy(), minlength=n_queries)
    count = np.bincount(query, minlength=n_queries).astype(np.float64)
    members = group_matrix(subset, n_subsets)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (weights @ (f1_sum[:, None] * members)) / (weights @ (count[:, None] * members))


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

    def query_index(frame: pl.DataFrame) -> np.ndarray:
        return frame.join(queries.select("id", "q"), on="id", how="left", maintain_order="left")["q"].to_numpy()

    spearman, alpha, samples = agreement_statistics(weights, judged, query_index(judged), subset_of_query, len(subsets))
    ideal_f1 = ideal_means(weights, ideal, query_index(ideal), subset_of_query, len(subsets))
    n_queries = np.append(
        [judged.filter(pl.col("subset") == name)["id"].n_unique() for name in subsets], judged["id"].n_unique()
    )
    columns = {"subset": [*subsets, ALL], "n": samples[0].astype(np.int64)}
    for name, values in (("spearman", spearman), ("krippendorff_alpha", alpha), ("ideal_f1", ideal_f1)):
        low, high = percentile_interval(values[1:].T, confidence)
        prefix = "" if name == "krippendorff_alpha" else f"{name}_"
        columns |= {name: values[0], f"{prefix}ci_low": low, f"{prefix}ci_high": high}
    columns["n_queries"] = n_queries.astype(np.int64)
    table = pl.DataFrame(columns).select(list(SCHEMA)).cast(SCHEMA)
    return table.with_columns(pl.col(pl.Float64).fill_nan(None))


def no_gold_reason(graded: pl.DataFrame) -> str:
    """Why the judge-agreement table of ``graded`` is empty, in one line."""
    if "answer_f1" not in graded.columns:
        return "the graded table has no answer scores (published files or an older table): no gold answers to compare"
    return "no graded sample's query has a gold answer (the texts tables' 'answers' are all empty)"
