"""The verdict: which measure predicts the target best, which are tied with it, which are worse,
and which cannot be decided and why (docs/METHODS.md#verdict).

A *family* is one (target, subset, E, segment), with segments ``narrow`` and ``wide`` (K < Np,
K >= Np) and ``all`` (every sample). Within a family:

1. Each measure's correlation (``corr_type``, Spearman by default) with the target. A measure
   with alpha is cross-fitted: alpha is chosen on one half of the queries and the correlation
   measured on the other, and the reverse, averaged (:func:`~retrieval_response.analysis.crossfit.crossfit`);
   ``alpha`` is where its correlation on all the family's samples peaks (the alpha to monitor).
2. The same on every bootstrap resample of the queries (stratified by subset, as the analysis's
   intervals), alpha chosen again inside each resample on its own halves: the intervals carry the
   choice of alpha.
3. Measures that cannot take part are ``undecided`` with a reason: too few samples, queries or
   resamples, a target with one value, a measure that needs Np on samples without it (traces
   without qrels: ``not computable``), a constant measure, an eRAG measure at K = 1 only (its
   answer is the top-1 answer itself), a measure defined on fewer samples than the family, or a
   measure that orders the samples exactly as another (its correlation is that measure's by
   construction; ``same_as`` names the one compared: a measure without alpha when there is one).
4. Of the others, ``best`` has the highest correlation. Every pair of them is compared by the
   paired difference of their correlations over the same resamples, with a single-step max-t
   adjustment over all pairs of the family (Romano and Wolf 2005): ``p_adjusted`` and the
   simultaneous interval ``diff_ci_low, diff_ci_high`` of best - measure hold with family-wise
   error ``1 - level`` over all pairs, so they stay valid although ``best`` itself was chosen
   on the data. ``worse``: the adjusted p-value of (best, measure) is below ``1 - level``;
   ``tied`` otherwise.
Measures are compared on the same samples: where a measure built from judgments takes part and
its subset and ranker have judgments, a sample whose top K lacks one (a text never judged, or an
unparseable UMBRELA reply) is left out of the verdict (:func:`lacking_judgments`; the job log counts
them), so that the judgment measure joins the comparisons instead of being defined on other
samples. A subset and ranker without any judgment keep every sample.

5. Power: for a tied or worse measure, the queries with which a true difference of 0.05 and of
   0.10 from the best would be declared with 80% power at the family-wise level
   (``queries_for_0.05``, ``queries_for_0.10``; :func:`queries_needed`): the standard error of
   a bootstrap difference over queries shrinks as 1 / sqrt(queries).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping

import numpy as np
import polars as pl

from retrieval_response.analysis import measures as measures_module
from retrieval_response.analysis.bootstrap import max_t, percentile_interval
from retrieval_response.analysis.crossfit_bootstrap import order_ranks, query_resampling, resampled_correlations
from retrieval_response.analysis.judgment_measures import JUDGMENT_COLUMNS
from retrieval_response.analysis.measures import MEASURES, NOT_COMPUTABLE
from retrieval_response.analysis.samples import default_measures, resolve_targets, segment_table, table_sizes
from retrieval_response.analysis.segments import VERDICT_SEGMENTATIONS
from retrieval_response.infra.errors import InputError

LOG = logging.getLogger(__name__)
DETECTABLE = (0.05, 0.10)
"""Differences of correlation the power plan sizes the queries for."""
MIN_QUERIES = 10
"""Fewest queries with which a family is decided: below it the bootstrap over queries says little."""
MIN_RESAMPLES = 100
"""Fewest bootstrap resamples with which a family is decided: the smallest adjusted p is 1/(1 + R)."""
POWER = 0.8
POWER_Z = 0.8416212335729143
"""The standard normal quantile of :data:`POWER` (scipy.stats.norm.ppf(0.8))."""
COLUMNS = (
    "target", "subset", "E", "segment", "corr_type", "measure", "n_samples", "n_queries", "value", "ci_low", "ci_high",
    "alpha",
    "difference_to_best", "diff_ci_low", "diff_ci_high", "p_adjusted", "decision", "reason", "same_as",
    "queries_for_0.05", "queries_for_0.10",
)
"""Columns of ``results/analysis/verdict.parquet`` in order (module docstring)."""
_SCHEMA = {
    "target": pl.String, "subset": pl.String, "E": pl.String, "segment": pl.String, "corr_type": pl.String,
    "measure": pl.String, "n_samples": pl.Int64, "n_queries": pl.Int64, "value": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "alpha": pl.Float64, "difference_to_best": pl.Float64, "diff_ci_low": pl.Float64,
    "diff_ci_high": pl.Float64,
    "p_adjusted": pl.Float64, "decision": pl.String, "reason": pl.String, "same_as": pl.String,
    "queries_for_0.05": pl.Int64, "queries_for_0.10": pl.Int64,
}


def queries_needed(half_width: float, critical: float, n_queries: int, difference: float,
                   min_queries: int = MIN_QUERIES) -> int | None:
    """Queries at which a true difference ``difference`` would be declared with probability
    :data:`POWER` at the family-wise level: with se = ``half_width`` / ``critical`` at
    ``n_queries`` queries and se shrinking as 1/sqrt(queries), ceil(n_queries ((critical + z) se /
    difference)^2), z the standard normal quantile of :data:`POWER`; at least ``min_queries``.
    None when the half-width or the critical value is not finite and positive (nothing to scale)."""
    if not (math.isfinite(half_width) and math.isfinite(critical) and half_width > 0 and critical > 0):
        return None
    se = half_width / critical
    return max(min_queries, math.ceil(n_queries * ((critical + POWER_Z) * se / difference) ** 2))


def max_t_adjust(draws: np.ndarray, values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`~retrieval_response.analysis.bootstrap.max_t` over every pair (i < j) of ``values``
    (m,) with bootstrap ``draws`` (m, R): the statistics are the paired differences v_i - v_j and
    their draws. Returns ``p`` and ``half`` as symmetric (m, m) matrices (diagonal p = 1, half =
    0) and the critical value."""
    m = len(values)
    p, half = np.ones((m, m)), np.zeros((m, m))
    if m < 2:
        return p, half, math.nan
    i, j = np.triu_indices(m, 1)
    p_pairs, half_pairs, critical = max_t(values[i] - values[j], draws[i] - draws[j], level)
    p[i, j] = p[j, i] = p_pairs
    half[i, j] = half[j, i] = half_pairs
    return p, half, critical


def _orders(family: pl.DataFrame, names: list[str], grid: np.ndarray, compat: str) -> dict[str, tuple]:
    """Per measure, its signature on the family: where it is defined (over the family's distinct
    feature rows) and the set of non-constant orders of those rows it takes over the alpha grid
    (one order at most for a measure without alpha; none for a constant measure). An alpha at
    which a measure is constant has no correlation and is never chosen, so two measures with
    equal signatures reach the same correlations, and the same best one, by construction."""
    columns = sorted({c for name in names for c in MEASURES[name].features})
    rows = family.select(columns).unique(maintain_order=True)
    signatures = {}
    for name in names:
        measure = MEASURES[name]
        defined = rows.select(pl.all_horizontal(pl.col(c).is_not_null() for c in measure.features)).to_series()
        defined = defined.to_numpy()
        features = {c: rows[c].to_numpy()[defined] for c in measure.features}
        ranks = order_ranks(measure, features, grid if measure.has_alpha else np.zeros(1), compat)
        varying = ranks[ranks.max(axis=1, initial=0) > 0].astype(np.int64)
        signatures[name] = (defined.tobytes(), frozenset(r.tobytes() for r in varying))
    return signatures


def _equivalence_reason(family: pl.DataFrame, name: str, same_as: str) -> str:
    """Why ``name`` orders the family's samples as ``same_as`` does, in words."""
    pairs = family.select("K", "Np").unique()
    by_construction = f"so its correlation is {same_as}'s by construction, not a finding"
    counts_only = {"n_p", "K", "Np"}.issuperset({*MEASURES[name].features, *MEASURES[same_as].features})
    if family["Np"].is_null().all() and family["K"].n_unique() == 1 and counts_only:
        return (f"orders the samples exactly as {same_as}: at the one K = {family['K'][0]} of this segment (and no Np) "
                f"both depend on the number of relevant documents in the top K alone, {by_construction}")
    if pairs.height == 1 and counts_only:
        k, np_ = pairs.row(0)
        return (f"orders the samples exactly as {same_as}: with one (K, Np) = ({k}, {np_}) in this segment both "
                f"depend on the number of positives in the top K alone, {by_construction}")
    one_np = family["Np"].n_unique() == 1 and family["Np"].null_count() == 0
    if one_np and MEASURES[name].has_alpha and MEASURES[same_as].has_alpha:
        return (f"orders the samples exactly as {same_as} at some alpha for every alpha of either: with one Np "
                f"({family['Np'][0]}) in this segment both are functions of (positives in the top K, K), "
                f"{by_construction}")
    return f"orders the samples exactly as {same_as} here, {by_construction}"


def _family_reason(family: pl.DataFrame, target: str, min_queries: int, resamples: int) -> str | None:
    """Why no measure of the family can be decided, or None."""
    n_queries = family["id"].n_unique()
    if n_queries < min_queries:
        return (f"only {n_queries} {'query' if n_queries == 1 else 'queries'} with a {target}: at least "
                f"{min_queries} are needed for an interval over queries")
    values = family[target].unique()
    if len(values) < 2:
        return f"the target {target} takes one value ({values[0]:g}) in every sample: nothing to predict"
    if resamples < MIN_RESAMPLES:
        return (f"{resamples} bootstrap resamples (analysis.bootstrap_resamples): at least {MIN_RESAMPLES} are "
                "needed for adjusted p-values below 0.05 to mean anything")
    return None


def _measure_reason(name: str, family: pl.DataFrame, signature: tuple, n: int, value: float) -> str | None:
    """Why measure ``name`` cannot take part in the family's comparisons, or None."""
    if name.startswith("eRAG") and (family["K"] == 1).all():
        return ("at K = 1 the eRAG answer is the top-1 answer itself, so its score is the target's own answer: "
                "circular")
    if n < family.height:
        why = ("the samples whose 2K partner was graded" if name == "F_e_partner"
               else "the samples whose top K it could be computed for")
        return (f"defined on {n} of the {family.height} samples ({why}): its correlation is over other samples "
                "than the rest, so it is not compared")
    if not signature[1]:
        return "constant in this segment: it cannot order the samples"
    if not math.isfinite(value):
        return "its correlation is undefined here (a half of the queries without spread)"
    return None


def _undecided(base: dict, name: str, n: int, reason: str, same_as: str | None = None) -> dict:
    """A row of measure ``name`` decided ``undecided`` for ``reason``."""
    return base | {"measure": name, "n_samples": n, "decision": "undecided", "reason": reason, "same_as": same_as}


def _decide_family(base: dict, family: pl.DataFrame, names: list[str], results: dict, left_out: dict[str, str],
                   grid, compat: str, level: float, min_queries: int, resamples: int) -> list[dict]:
    """The rows of one family, in the order of ``names`` (module docstring): undecided measures
    with their reason (``left_out``: the segments table's reason of each measure it leaves out),
    then best, tied and worse among the others. Of measures ordering the samples alike, one
    without alpha is compared (its correlation needs no cross-fitting), else the first of ``names``."""
    n_queries = family["id"].n_unique()
    base = base | {"n_queries": n_queries}
    reason = _family_reason(family, base["target"], min_queries, resamples)
    if reason is not None:
        return [_undecided(base, name, results.get(name, (0,))[0], reason) for name in names]
    present = [name for name in names if name in results]
    orders = _orders(family, present, grid, compat)
    rows, candidates, seen = {}, [], {}
    for name in sorted(names, key=lambda name: MEASURES[name].has_alpha):
        if MEASURES[name].needs_Np and family["Np"].is_null().all():
            rows[name] = _undecided(base, name, 0, NOT_COMPUTABLE)
            continue
        if name not in results:
            rows[name] = _undecided(base, name, 0, left_out[name])
            continue
        n, value, draws, alpha = results[name]
        low, high = percentile_interval(draws[None, :], level)
        row = base | {"measure": name, "n_samples": n, "value": value, "ci_low": float(low[0]), "ci_high": float(high[0]),
                      "alpha": alpha}
        key = orders[name]
        reason = _measure_reason(name, family, key, n, value)
        if reason is None and key in seen:
            rows[name] = row | {"decision": "undecided", "reason": _equivalence_reason(family, name, seen[key]),
                                "same_as": seen[key]}
            continue
        if reason is not None:
            rows[name] = row | {"decision": "undecided", "reason": reason}
            continue
        seen[key] = name
        rows[name] = row
        candidates.append(name)
    candidates.sort(key=names.index)
    if len(candidates) == 1:
        only = candidates.pop()
        rows[only] |= {"decision": "undecided",
                       "reason": "every other measure is constant here or orders the samples as it does: "
                                 "nothing to compare it with"}
    if candidates:
        values = np.array([results[c][1] for c in candidates])
        draws = np.vstack([results[c][2] for c in candidates])
        p, half, critical = max_t_adjust(draws, values, level)
        best = int(np.argmax(values))
        rows[candidates[best]] |= {"decision": "best", "difference_to_best": 0.0}
        for k, name in enumerate(candidates):
            if k == best:
                continue
            difference = values[best] - values[k]
            worse = p[best, k] < 1 - level
            rows[name] |= {
                "difference_to_best": difference, "diff_ci_low": difference - half[best, k],
                "diff_ci_high": difference + half[best, k], "p_adjusted": p[best, k],
                "decision": "worse" if worse else "tied",
                "reason": None if worse else "not distinguishable from the best at the family-wise level",
                **{f"queries_for_{d:.2f}": queries_needed(half[best, k], critical, n_queries, d, min_queries)
                   for d in DETECTABLE},
            }
    return [rows[name] for name in names]


def lacking_judgments(graded: pl.DataFrame, names: list[str]) -> pl.Series:
    """Per sample: True when, for a judgment column some measure of ``names`` is built from
    (``needs``), its top-K list lacks a value (a null or NaN element, or no list) while some sample
    of its subset and ranker (``subset``, ``E``) has one: the judgment measures are defined there,
    on the other samples only. A subset and ranker without any judgment keep every sample."""
    columns = [c for c in JUDGMENT_COLUMNS if c in graded.columns and any(MEASURES[n].needs == c for n in names)]
    if not columns:
        return pl.Series([False] * graded.height, dtype=pl.Boolean)
    present = [pl.col(c).cast(pl.List(pl.Float64)).list.eval(pl.element().fill_nan(None).is_not_null()) for c in columns]
    return graded.select(pl.any_horizontal(
        [~p.list.all().fill_null(False) & p.list.any().fill_null(False).any().over("subset", "E") for p in present]))[:, 0]


def verdict_samples(graded: pl.DataFrame, names: list[str] | None = None) -> pl.DataFrame:
    """The samples the verdict compares ``names`` (default: the default measures) on: ``graded``
    without the samples :func:`lacking_judgments`, whose number is logged as a warning."""
    lacking = lacking_judgments(graded, names or default_measures(graded))
    if lacking.any():
        LOG.warning("%d of %d samples left out of the verdict: their top K lacks a judgment that other samples "
                    "of their subset and ranker have, and the measures are compared on the same samples",
                    lacking.sum(), graded.height)
    return graded.filter(~lacking)


def verdict_table(
    graded: pl.DataFrame,
    *,
    alpha_grid: str | np.ndarray,
    bootstrap_resamples: int,
    segments: Mapping[str, pl.DataFrame] | None = None,
    min_segment_samples: int | None = None,
    seed: int = 0,
    ranked: pl.DataFrame | None = None,
    measures: list[str] | None = None,
    targets: list[str] | None = None,
    corr_type: str = "spearman",
    compat: str = "exact",
    level: float = 0.95,
    min_queries: int = MIN_QUERIES,
) -> pl.DataFrame:
    """The verdict table (:data:`COLUMNS`), one row per family x measure (module docstring).

    Which segments each measure x target has enough samples in is read from ``segments``, the
    segments tables (:func:`~retrieval_response.analysis.samples.segment_table`, no finer keys) of
    the segmentations of :data:`VERDICT_SEGMENTATIONS` by name, written with the same measures and
    targets; when None they are made here with ``min_segment_samples``. ``measures`` defaults to
    the analysis's default measures, ``targets`` to every target with a value; samples
    :func:`lacking_judgments` are left out (the ``verdict_segments`` tables count without them); the resamples and
    halves depend only on ``seed`` and the query ids, as in the analysis.
    """
    grid = measures_module.alpha_grid(alpha_grid) if isinstance(alpha_grid, str) else np.asarray(alpha_grid)
    names = measures or default_measures(graded, ranked)
    graded = verdict_samples(graded, names)
    target_names = resolve_targets(graded, targets)
    out = []
    # narrow and wide compare K with Np: without Np (traces) the verdict is given on all samples only
    segmentations = VERDICT_SEGMENTATIONS if graded["Np"].is_not_null().any() else ("all",)
    if segments is None:
        if min_segment_samples is None:
            raise ValueError("verdict_table: give the segments tables or min_segment_samples")
        segments = {segmentation: segment_table(graded, segmentation=segmentation, ranked=ranked, measures=names,
                                                targets=target_names, min_segment_samples=min_segment_samples)
                    for segmentation in segmentations}
    for segmentation in segmentations:
        if segmentation not in segments:
            raise InputError("segments tables", f"segmentation {segmentation}", "required by the verdict")
        resamples = bootstrap_resamples if bootstrap_resamples >= MIN_RESAMPLES else 0  # too few: undecided anyway
        resampling = query_resampling(graded, ranked, segmentation, target_names, compat, seed, resamples)
        prepared = resampling.prepared
        for target in target_names:
            sizes = {name: table_sizes(prepared, segments[segmentation], name, target) for name in names}
            results = resampled_correlations(resampling, names, target, grid, corr_type, compat, sizes)
            reasons = {name: dict(frame.filter(~pl.col("kept")).select("seg", "reason").iter_rows())
                       for name, frame in sizes.items()}
            for seg, E, subset, segment in prepared.segments.select("seg", "E", "subset", "segment").iter_rows():
                family = prepared.rows.filter((pl.col("seg") == seg) & pl.col(target).is_not_null())
                if family.height == 0:
                    continue
                base = {"target": target, "subset": subset, "E": E, "segment": segment, "corr_type": corr_type}
                left_out = {name: by_seg[seg] for name, by_seg in reasons.items() if seg in by_seg}
                out += _decide_family(base, family, names, results.get(seg, {}), left_out, grid, compat, level,
                                      min_queries, bootstrap_resamples)
    return pl.DataFrame(out, schema=_SCHEMA).select(COLUMNS)
