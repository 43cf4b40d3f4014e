"""The verdict: which measure to monitor for each target, how much it could be giving up to the
best one and how sure, which measures are surely worse, and which cannot be decided and why
(docs/METHODS.md#verdict).

A *family* is one (target, subset, E, segment), with segments ``narrow`` and ``wide`` (K < Np,
K >= Np) and ``all`` (every sample). Within a family:

1. Each candidate measure's correlation (``corr_type``, Spearman by default) with the target. A
   measure with alpha is cross-fitted: alpha is chosen on one half of the queries and the
   correlation measured on the other, and the reverse, averaged (Chernozhukov et al. 2018's
   cross-fitting; :func:`~retrieval_response.analysis.crossfit.crossfit`); ``alpha`` is where its
   correlation on all the family's samples peaks (the alpha to monitor).
2. The same on every bootstrap resample of the queries (Efron 1979; stratified by subset, as the
   analysis's intervals), alpha chosen again inside each resample on its own halves: the
   intervals carry the choice of alpha.
3. Measures that cannot take part are ``undecided`` with a reason code (:mod:`.reasons`) and its
   words: too few samples, queries or resamples, a target with one value, a measure that needs Np
   on samples without it (traces without qrels), a constant measure, an eRAG measure at K = 1
   only (its answer is the top-1 answer itself), a measure defined on fewer samples than the
   family, or a measure that orders the samples exactly as another (its correlation is that
   measure's by construction; ``same_as`` names the one compared: of measures ordering the
   samples alike, the cheapest (:attr:`~retrieval_response.measures.registry.Measure.cost`), then
   one without alpha, then the first in registry order).
4. The others are compared by multiple comparisons with the best (Hsu 1984, 1996), its critical
   value from the bootstrap (:func:`~.comparisons.best_comparisons`): for each measure X a
   simultaneous interval ``mcb_low, mcb_high`` of r_X - max over the others of r_j; ``margin`` =
   -``mcb_low``, how much the best other measure could beat X; ``decision`` ``worse`` when
   ``mcb_high`` = 0 (``p_worse`` < 1 - level: some measure is surely better), else ``possibly
   best``. ``recommended``: of the measures whose margin is the smallest within Monte Carlo error
   (:meth:`~.comparisons.BestComparisons.tied_with_smallest`), the cheapest, then the smallest
   margin, then registry order. The family-wise error 1 - level covers every interval of the
   family at once, the choice of the best included.
Measures are compared on the same samples: where a measure built from judgments takes part and
its subset and ranker have judgments, a sample whose top K lacks one (a text never judged, or an
unparseable UMBRELA reply) is left out of the verdict (:func:`lacking_judgments`), counted per
family in ``samples_left_out``.

5. Power: the queries with which a measure's margin would fall to 0.05 and to 0.10 with 80%
   probability, the observed differences taken as true (``queries_for_0.05``,
   ``queries_for_0.10``; :func:`queries_needed`): the standard errors of bootstrap differences over
   queries shrink as 1 / sqrt(queries).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import percentile_interval
from retrieval_response.analysis.crossfit_bootstrap import order_ranks, query_resampling, resampled_correlations, varying
from retrieval_response.analysis.samples import default_measures, resolve_targets, segment_table, table_sizes
from retrieval_response.analysis.segments import DEFAULT_MIN_ALL_SAMPLES, VERDICT_SEGMENTATIONS, no_sample_with_measure
from retrieval_response.decide.comparisons import BestComparisons, best_comparisons
from retrieval_response.decide.reasons import POSSIBLY_BEST, UNDECIDED, WORSE
from retrieval_response.infra.errors import InputError
from retrieval_response.measures import alpha as measures_module
from retrieval_response.measures.judgments import JUDGMENT_COLUMNS
from retrieval_response.measures.registry import MEASURES, NOT_COMPUTABLE

DETECTABLE = (0.05, 0.10)
"""Margins the power plan sizes the queries for."""
MIN_QUERIES = DEFAULT_MIN_ALL_SAMPLES
"""Fewest queries with which a family is decided: below it the bootstrap over queries says little
(the segments' default minimum on ``all``, ``analysis.segments.DEFAULT_MIN_ALL_SAMPLES``)."""
MIN_RESAMPLES = 100
"""Fewest bootstrap resamples with which a family is decided: the smallest adjusted p is 1/(1 + R)."""
POWER = 0.8
POWER_Z = 0.8416212335729143
"""The standard normal quantile of :data:`POWER` (scipy.stats.norm.ppf(0.8))."""
_SCHEMA = {
    "target": pl.String, "subset": pl.String, "E": pl.String, "segment": pl.String, "corr_type": pl.String,
    "candidates": pl.String, "measure": pl.String, "cost": pl.Int64, "n_samples": pl.Int64, "n_queries": pl.Int64,
    "samples_left_out": pl.Int64, "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "alpha": pl.Float64, "behind_best": pl.Float64, "mcb_low": pl.Float64, "mcb_high": pl.Float64,
    "margin": pl.Float64, "p_worse": pl.Float64, "decision": pl.String, "recommended": pl.Boolean,
    "reason_code": pl.String, "reason": pl.String, "same_as": pl.String, "critical": pl.Float64,
    "resamples": pl.Int64, "queries_for_0.05": pl.Int64, "queries_for_0.10": pl.Int64,
    "judge_check": pl.String, "judge_weak": pl.Boolean,
}
COLUMNS = tuple(_SCHEMA)
"""Columns of ``results/analysis/verdict.parquet`` in order (module docstring; docs/OUTPUTS.md):
``candidates`` the measures the family chose among (joined by ", "), ``cost`` the measure's cost
class, ``behind_best`` max over the other compared measures of r_j - r_X, ``critical`` the MCB
critical value and ``resamples`` R (``p_worse`` is a multiple of 1/(1 + R)); ``judge_check`` and
``judge_weak`` are the family's check of its LLM-made inputs
(:func:`~retrieval_response.decide.judge_check.with_judge_checks`; null and False until it is
added). Undefined values are null, never NaN."""


def queries_needed(differences: np.ndarray, ses: np.ndarray, critical: float, n_queries: int, margin: float,
                   min_queries: int = MIN_QUERIES) -> int | None:
    """Queries at which a measure's margin would fall to ``margin`` with probability :data:`POWER`,
    the observed differences taken as true: the margin is max_j (d_j + c se_j) over the measures j
    bounding it (``differences`` d_j = r_j - r_X, ``ses`` se_j at ``n_queries`` queries, c =
    ``critical``); with se shrinking as 1/sqrt(queries), each term falls to ``margin`` with 80%
    probability at Q_j = n_queries ((c + z) se_j / (margin - d_j))^2, z the standard normal quantile
    of :data:`POWER`; the answer is max_j Q_j, at least ``min_queries``. None when nothing bounds the
    margin, when c or an se is not finite and positive, or when some d_j >= ``margin`` (the margin
    cannot fall below an observed difference)."""
    differences, ses = np.asarray(differences, np.float64), np.asarray(ses, np.float64)
    if differences.size == 0 or not (math.isfinite(critical) and critical > 0):
        return None
    if not (np.isfinite(ses).all() and (ses > 0).all()) or (differences >= margin).any():
        return None
    needed = n_queries * ((critical + POWER_Z) * ses / (margin - differences)) ** 2
    return max(min_queries, math.ceil(float(needed.max())))


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
        signatures[name] = (defined.tobytes(), frozenset(r.tobytes() for r in ranks[varying(ranks)].astype(np.int64)))
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


def _family_reason(family: pl.DataFrame, target: str, min_queries: int, resamples: int) -> tuple[str, str] | None:
    """(code, words) of why no measure of the family can be decided, or None."""
    n_queries = family["id"].n_unique()
    if n_queries < min_queries:
        return ("few_queries", f"only {n_queries} {'query' if n_queries == 1 else 'queries'} with a {target}: at least "
                f"{min_queries} are needed for an interval over queries")
    values = family[target].unique()
    if len(values) < 2:
        return "target_constant", f"the target {target} takes one value ({values[0]:g}) in every sample: nothing to predict"
    if resamples < MIN_RESAMPLES:
        return ("few_resamples", f"{resamples} bootstrap resamples (analysis.bootstrap_resamples): at least "
                f"{MIN_RESAMPLES} are needed for adjusted p-values below 0.05 to mean anything")
    return None


def _measure_reason(name: str, family: pl.DataFrame, signature: tuple, n: int, value: float) -> tuple[str, str] | None:
    """(code, words) of why measure ``name`` cannot take part in the family's comparisons, or None."""
    if name.startswith("eRAG") and (family["K"] == 1).all():
        return ("circular", "at K = 1 the eRAG answer is the top-1 answer itself, so its score is the target's own "
                "answer: circular")
    if n < family.height:
        why = ("the samples whose 2K partner was graded" if name == "F_e_partner"
               else "the samples whose top K it could be computed for")
        return ("other_samples", f"defined on {n} of the {family.height} samples ({why}): its correlation is over "
                "other samples than the rest, so it is not compared")
    if not signature[1]:
        return "constant", "constant in this segment: it cannot order the samples"
    if not math.isfinite(value):
        return "undefined", "its correlation is undefined here (a half of the queries without spread)"
    return None


def _finite(value) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _undecided(base: dict, name: str, n: int, code: str, reason: str, same_as: str | None = None) -> dict:
    """A row of measure ``name`` decided ``undecided`` for ``reason`` (code ``code``)."""
    return base | {"measure": name, "cost": MEASURES[name].cost, "n_samples": n, "decision": UNDECIDED,
                   "recommended": False, "reason_code": code, "reason": reason, "same_as": same_as}


def _compared_first(names: list[str]) -> list[str]:
    """``names`` in the order in which one of measures ordering the samples alike is chosen to be
    compared: cheapest first, then without alpha, then registry order."""
    return sorted(names, key=lambda name: (MEASURES[name].cost, MEASURES[name].has_alpha, names.index(name)))


def _decide_family(base: dict, family: pl.DataFrame, names: list[str], results: dict,
                   left_out: dict[str, tuple[str, str]], grid, compat: str, level: float, min_queries: int,
                   resamples: int) -> list[dict]:
    """The rows of one family, in the order of ``names`` (module docstring): undecided measures
    with their reason (``left_out``: the segments table's (code, reason) of each measure it
    leaves out), then the compared ones with their MCB interval, margin, decision and the one
    recommended."""
    n_queries = family["id"].n_unique()
    base = base | {"n_queries": n_queries}
    reason = _family_reason(family, base["target"], min_queries, resamples)
    if reason is not None:
        return [_undecided(base, name, results.get(name, (0,))[0], *reason) for name in names]
    present = [name for name in names if name in results]
    orders = _orders(family, present, grid, compat)
    rows, compared, seen = {}, [], {}
    for name in _compared_first(names):
        if MEASURES[name].needs_Np and family["Np"].is_null().all():
            rows[name] = _undecided(base, name, 0, "not_computable", NOT_COMPUTABLE)
            continue
        if name not in results:
            rows[name] = _undecided(base, name, 0, *left_out[name])
            continue
        n, value, draws, alpha = results[name]
        low, high = percentile_interval(draws[None, :], level)
        row = base | {"measure": name, "cost": MEASURES[name].cost, "n_samples": n, "value": _finite(value),
                      "ci_low": _finite(low[0]), "ci_high": _finite(high[0]), "alpha": alpha, "recommended": False}
        key = orders[name]
        why = _measure_reason(name, family, key, n, value)
        if why is None and key in seen:
            rows[name] = row | {"decision": UNDECIDED, "reason_code": "same_order",
                                "reason": _equivalence_reason(family, name, seen[key]), "same_as": seen[key]}
            continue
        if why is not None:
            rows[name] = row | {"decision": UNDECIDED, "reason_code": why[0], "reason": why[1]}
            continue
        seen[key] = name
        rows[name] = row
        compared.append(name)
    compared.sort(key=names.index)
    if len(compared) == 1:
        only = compared.pop()
        rows[only] |= {"decision": UNDECIDED, "reason_code": "nothing_to_compare",
                       "reason": "every other measure is constant here or orders the samples as it does: "
                                 "nothing to compare it with"}
    if compared:
        rows |= _compare(base, compared, results, rows, level, n_queries, min_queries)
    return [rows[name] for name in names]


def recommend(names: list[str], mcb: BestComparisons) -> int | None:
    """Index in ``names`` (the measures of ``mcb``, in its order) of the measure to monitor: of the
    measures whose margin is the smallest within Monte Carlo error
    (:meth:`~.comparisons.BestComparisons.tied_with_smallest`), the cheapest
    (:attr:`~retrieval_response.measures.registry.Measure.cost`: relevance of the top K alone <
    Np too < LLM judgments), then the smallest margin, then the first; None when no margin is finite."""
    tied = np.flatnonzero(mcb.tied_with_smallest())
    if tied.size == 0:
        return None
    return int(min(tied, key=lambda k: (MEASURES[names[k]].cost, mcb.margin[k], k)))


def _compare(base: dict, compared: list[str], results: dict, rows: dict, level: float, n_queries: int,
             min_queries: int) -> dict[str, dict]:
    """The rows of the ``compared`` measures after multiple comparisons with the best
    (:func:`~.comparisons.best_comparisons`) and the choice of the recommended one."""
    values = np.array([results[c][1] for c in compared])
    mcb = best_comparisons(values, np.vstack([results[c][2] for c in compared]), level)
    pick = recommend(compared, mcb)
    out = {}
    for k, name in enumerate(compared):
        others = np.delete(values, k)
        bounding = ~mcb.worse & (np.arange(len(compared)) != k)
        plan = (-mcb.difference[k, bounding], mcb.se[k, bounding], mcb.critical, n_queries)
        out[name] = rows[name] | {
            "behind_best": float(others.max() - values[k]), "mcb_low": _finite(mcb.low[k]),
            "mcb_high": _finite(mcb.high[k]), "margin": _finite(mcb.margin[k]), "p_worse": float(mcb.p[k]),
            "decision": WORSE if mcb.worse[k] else POSSIBLY_BEST, "recommended": bool(k == pick),
            "reason_code": None, "reason": None, "critical": _finite(mcb.critical), "resamples": mcb.resamples,
            **{f"queries_for_{d:.2f}": queries_needed(*plan, d, min_queries) for d in DETECTABLE},
        }
    return out


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
    without the samples :func:`lacking_judgments` (the verdict counts them per family)."""
    return graded.filter(~lacking_judgments(graded, names or default_measures(graded)))


def verdict_candidates(graded: pl.DataFrame, candidates: Sequence[str] | None = None,
                       ranked: pl.DataFrame | None = None) -> list[str]:
    """The measures the verdict chooses among: the analysis's default measures
    (:func:`~retrieval_response.analysis.samples.default_measures`), only those of ``candidates``
    when given (a list fixed before seeing the data, ``verdict.candidates``), in registry order.
    :class:`InputError` for a name that is not a measure of the registry."""
    names = default_measures(graded, ranked)
    if candidates is None:
        return names
    unknown = [c for c in candidates if c not in MEASURES]
    if unknown:
        raise InputError("config", "verdict.candidates", f"not measures of the registry: {', '.join(unknown)} "
                         f"(known: {', '.join(MEASURES)})")
    return [name for name in names if name in candidates]


def _left_out_reasons(sizes: pl.DataFrame) -> dict[int, tuple[str, str]]:
    """segment id -> (code, words) of each segment the segments table leaves a measure out of:
    ``not_computed`` where no sample has the measure (n_samples = n_missing_target = 0), else
    ``few_samples``."""
    left = sizes.filter(~pl.col("kept"))
    codes = pl.when(no_sample_with_measure(pl.col("n_samples"), pl.col("n_missing_target"))).then(pl.lit("not_computed"))
    return {seg: (code, reason) for seg, code, reason in left.select(
        "seg", codes.otherwise(pl.lit("few_samples")), "reason").iter_rows()}


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
    targets; when None they are made here with ``min_segment_samples``. ``measures``: the
    candidates (default: the analysis's default measures), ``targets`` default to every target
    with a value; samples :func:`lacking_judgments` are left out (the ``verdict_segments`` tables
    count without them); the resamples and halves depend only on ``seed`` and the query ids, as in
    the analysis.
    """
    grid = measures_module.alpha_grid(alpha_grid) if isinstance(alpha_grid, str) else np.asarray(alpha_grid)
    names = measures or default_measures(graded, ranked)
    lacking = lacking_judgments(graded, names)
    left_out_by = {(subset, E): n for subset, E, n in graded.filter(lacking).group_by("subset", "E").len().iter_rows()}
    graded = graded.filter(~lacking)
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
            reasons = {name: _left_out_reasons(frame) for name, frame in sizes.items()}
            for seg, E, subset, segment in prepared.segments.select("seg", "E", "subset", "segment").iter_rows():
                family = prepared.rows.filter((pl.col("seg") == seg) & pl.col(target).is_not_null())
                if family.height == 0:
                    continue
                base = {"target": target, "subset": subset, "E": E, "segment": segment, "corr_type": corr_type,
                        "candidates": ", ".join(names), "samples_left_out": left_out_by.get((subset, E), 0)}
                left_out = {name: by_seg[seg] for name, by_seg in reasons.items() if seg in by_seg}
                out += _decide_family(base, family, names, results.get(seg, {}), left_out, grid, compat, level,
                                      min_queries, bootstrap_resamples)
    return pl.DataFrame(out, schema=_SCHEMA).with_columns(pl.col("judge_weak").fill_null(False)).select(COLUMNS)
