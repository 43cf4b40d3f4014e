"""The analysis: correlations of retrieval measures with answer-quality targets, per segment (docs/METHODS.md#correlations).

Input: a graded table with at least ``id, E, Nc, Np, K, inK`` and one target column; optional
``subset`` (else ``id.split('-')[0]``), ``np_2K`` (positives in the top 2K) or a ``ranked``
table to count it.

Targets (the registry :mod:`.targets`): ``grade`` (the paper's 1-5 LLM grade),
``grade_expected`` (the probability-weighted grade from the grader's log-probabilities), their
gold-reference counterparts ``grade_gold`` and ``grade_gold_expected`` (graded against the gold
answers), and three judge-free scores of the top-K answer against the gold answers: ``answer_f1``
(token F1), ``answer_recall`` (the share of a gold answer's tokens in the answer) and
``answer_contains`` (a gold answer occurs in the answer; boolean, read as 0/1). A sample whose target is null (ungraded, no
log-probabilities, no gold answer) is left out of that target's correlations and counted in
``n_missing_target``. A target with at most :data:`.samples.COUNT_PATH_MAX_VALUES` distinct values goes
through the cell x value count tables of :mod:`.correlations`; any other through the per-sample
kernel of :mod:`.sample_correlations`. Both are exact.

Output of :func:`analysis_tables`, per segmentation:

**correlations** (``results/analysis/correlations_<segmentation>.parquet``), one row per
segment x target x measure x correlation type:
``segmentation, E, subset, [finer keys], segment, target, n_samples, n_missing_target, measure,
corr_type, value, null_reason, alpha, alpha_rule, value_crossfit, ci_low, ci_high``.
``n_samples`` = samples that entered this measure's correlation with this target (the measure's
features and the target not null; ``F_e_partner`` drops samples without a 2K partner); a row
exists only when ``n_samples`` >= ``min_segment_samples``: the minimum applies to the measure's own count.
``value`` = the correlation, for measures with alpha the maximum over the grid; ``null_reason``
says why ``value`` is null: ``too_few_samples`` (n_samples < 2), ``constant_target`` (one target value in
the segment) or ``constant_measure`` (one measure value at every alpha), checked in that order;
null when ``value`` is not. ``alpha`` = the first grid alpha reaching the maximum (null without
alpha); ``alpha_rule`` says how alpha was chosen (e.g. ``first max over l350^0.95 (702
values)``); ``value_crossfit`` = alpha chosen on one half of the query ids, correlation on the
other, and the reverse, averaged (for measures without alpha it equals ``value``); ``ci_low,
ci_high`` = percentile bootstrap interval over query-id resamples, at the alpha chosen on the
full data (alpha is not re-chosen inside a resample), null when ``bootstrap_resamples`` = 0.

**differences**, one row per segment x target x difference x correlation type:
``segmentation, E, subset, [finer keys], segment, target, n_samples, difference, corr_type, value,
ci_low, ci_high, share_positive``; ``difference`` "X-Y" = corr(X) - corr(Y) (same resamples for
both: paired), ``n_samples`` = the smaller of the two measures' n_samples, ``share_positive`` = share of
resamples where the difference is > 0.

**segments** (:func:`.samples.segment_table`, ``results/analysis/segments_<segmentation>.parquet``), one
row per segment x target x measure, left-out ones included: ``segmentation, E, subset, [finer
keys], segment, target, measure, n_samples, n_missing_target, kept, reason``; ``kept`` = ``n_samples`` >=
``min_segment_samples`` (the rows the correlations table has), ``reason`` why not
(``n < <min>: ...``), null where kept.

**resamples** (``results/analysis/resamples_<segmentation>.parquet``),
one row per correlations row of the chosen corr types: ``segmentation, E, subset, [finer keys],
segment, target, measure, corr_type, resamples``, the correlation on every bootstrap draw (the
draws behind ``ci_low, ci_high``), for statistics of several correlations on the same draws
(:mod:`.replication`).

Ties and ``compat`` (:data:`~.formulas.COMPAT_MODES`): ``"exact"`` (default) evaluates the
measures with their exact ties (:mod:`.measures`) and treats values within
:data:`~.correlations.TIE_ULPS` units in the last place as equal, on the measure's and on the
target's side (:func:`~.correlations.tie_anchors`): a measure spread by rounding only is
constant (null, ``constant_measure``), never a correlation made of rounding noise.
``"paper"`` evaluates every formula in the paper's floating-point order and ties only exactly
equal values, as scipy on the paper's arrays: the published numbers, rounding included.

Measure names say the variant: ``F_e`` counts np_2K in the ranking, ``F_e_partner`` is the
paper's 2K-partner lookup; ``nDCG`` is the paper's, ``nDCG@K`` the standard one.
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import (
    percentile_interval,
    resample_weights,
    share_positive,
)
from retrieval_response.analysis.correlations import (
    CORR_TYPES,
    TIE_ULPS,
)
from retrieval_response.analysis.samples import (
    default_measures,
    measure_cells,
    measure_sizes,
    prepare_samples,
    resolve_targets,
    with_segment_keys,
)
from retrieval_response.analysis.segment_correlations import (
    bootstrap_measure,
    correlate_measure,
    null_reasons,
    sample_weights,
)
from retrieval_response.analysis.segments import segment_keys
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.measures import alpha as measures_module
from retrieval_response.measures.claims import paired_differences
from retrieval_response.measures.formulas import COMPAT_MODES
from retrieval_response.measures.registry import MEASURES


def analysis_tables(
    graded: pl.DataFrame,
    *,
    segmentation: str,
    alpha_grid: str | np.ndarray,
    corr_types=CORR_TYPES,
    min_segment_samples: int,
    finer_keys=(),
    bootstrap_resamples: int = 1000,
    seed: int = 0,
    ranked: pl.DataFrame | None = None,
    measures: list[str] | None = None,
    targets: list[str] | None = None,
    compat: str = "exact",
    ci_level: float = 0.95,
    resample_corr_types=(),
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Correlations, paired differences and resampled correlations (see the module docstring for the columns).

    ``alpha_grid``: a spec for :func:`retrieval_response.measures.alpha.alpha_grid` or the sorted grid itself; ``segmentation``
    "fit" or "ratio"; a (segment, measure, target) enters when at least ``min_segment_samples``
    samples have the measure and the target; ``measures`` defaults to :func:`default_measures`,
    ``targets`` to :func:`default_targets`; ``compat`` "exact" or "paper" (module docstring).
    Halves and resamples depend only on ``seed`` and the query ids. The third table holds, for
    the corr types of ``resample_corr_types`` only, every correlation's bootstrap draws
    (:data:`RESAMPLE_COLUMNS`; empty by default).
    """
    if compat not in COMPAT_MODES:
        raise ValueError(f"compat {compat!r}: expected one of {COMPAT_MODES}")
    grid_spec = alpha_grid if isinstance(alpha_grid, str) else "a given grid"
    grid = measures_module.alpha_grid(alpha_grid) if isinstance(alpha_grid, str) else np.asarray(alpha_grid, np.float64)
    corr_types = list(corr_types)
    measure_names = measures or default_measures(graded, ranked)
    unknown = [m for m in measure_names if m not in MEASURES or not MEASURES[m].correlatable]
    if unknown:
        raise ValueError(f"measures {unknown}: expected names from {sorted(n for n, m in MEASURES.items() if m.correlatable)}")
    target_names = resolve_targets(graded, targets)
    tie_ulps = TIE_ULPS if compat == "exact" else 0
    prepared = prepare_samples(graded, ranked, segmentation, finer_keys, target_names, tie_ulps, seed)
    weights = resample_weights(prepared.query_strata, bootstrap_resamples, seed) if bootstrap_resamples else None

    correlation_parts, boots, by_query = [], {}, None
    for target in target_names:
        for name in measure_names:
            measure = MEASURES[name]
            cells = measure_cells(prepared, measure, target,
                                  measure_sizes(prepared, measure, target, min_segment_samples))
            value, alpha_index, value_crossfit = correlate_measure(measure, cells, grid, corr_types, compat)
            if weights is not None:
                cell_weights, by_query = sample_weights(weights, cells, by_query)
                boot = bootstrap_measure(measure, cells, grid, corr_types, compat, alpha_index, cell_weights)
            else:
                boot = np.full(value.shape + (0,), np.nan)
            boots[target, name] = (cells.seg, cells.n_samples, value, boot)
            low, high = percentile_interval(boot, ci_level)
            alpha = np.where((alpha_index >= 0) & measure.has_alpha, grid[np.maximum(alpha_index, 0)], np.nan)
            correlation_parts.append(
                _long_table(
                    cells.seg,
                    {
                        "target": target,
                        "n_samples": cells.n_samples,
                        "n_missing_target": cells.n_missing_target,
                        "measure": name,
                        "value": value,
                        "null_reason": null_reasons(cells, value),
                        "alpha": alpha,
                        "alpha_rule": f"first max over {grid_spec} ({len(grid)} values)" if measure.has_alpha else None,
                        "value_crossfit": value_crossfit,
                        "ci_low": low,
                        "ci_high": high,
                    },
                    corr_types,
                )
            )
    keys = segment_keys(finer_keys)
    segments = prepared.segments.with_columns(segmentation=pl.lit(segmentation))
    correlations = with_segment_keys(pl.concat(correlation_parts), segments, keys, CORRELATION_COLUMNS)
    differences = with_segment_keys(_differences(boots, target_names, corr_types, ci_level), segments, keys, DIFFERENCE_COLUMNS)
    resampled = _resample_table(boots, corr_types, [c for c in resample_corr_types if c in corr_types])
    resampled = with_segment_keys(resampled, segments, keys, RESAMPLE_COLUMNS)
    return correlations, differences, resampled


CORRELATION_COLUMNS = (
    "target", "n_samples", "n_missing_target", "measure", "corr_type", "value", "null_reason", "alpha", "alpha_rule",
    "value_crossfit", "ci_low", "ci_high",
)
"""Columns of the correlations table after the segmentation and segment keys."""
DIFFERENCE_COLUMNS = ("target", "n_samples", "difference", "corr_type", "value", "ci_low", "ci_high", "share_positive")
"""Columns of the differences table after the segmentation and segment keys."""
RESAMPLE_COLUMNS = ("target", "measure", "corr_type", "resamples")
"""Columns of the resamples table after the segmentation and segment keys: ``resamples`` is the
list of the correlation's values on the bootstrap draws, in draw order (NaN where undefined)."""
_STRING_COLUMNS = ("target", "measure", "difference", "corr_type", "null_reason", "alpha_rule")
_INTEGER_COLUMNS = ("seg", "n_samples", "n_missing_target")


def _dtype(column: str) -> pl.DataType:
    return pl.String if column in _STRING_COLUMNS else pl.Int64 if column in _INTEGER_COLUMNS else pl.Float64


def _long_table(seg: np.ndarray, columns: dict, corr_types: list[str]) -> pl.DataFrame:
    """Rows (segment, corr type) from per-segment (S,) or (S, corr types) arrays and scalars."""
    n_types = len(corr_types)
    size = len(seg) * n_types
    data = {"seg": np.repeat(np.asarray(seg, np.int64), n_types), "corr_type": list(corr_types) * len(seg)}
    for key, v in columns.items():
        if isinstance(v, np.ndarray):
            data[key] = v.reshape(-1) if v.ndim == 2 else np.repeat(v, n_types)
        else:
            data[key] = [v] * size
    schema = {key: _dtype(key) for key in data}
    data = {key: list(v) if schema[key] == pl.String else v for key, v in data.items()}
    return pl.DataFrame(data, schema=schema, strict=False).with_columns(pl.col(pl.Float64).fill_nan(None))


def _differences(boots: dict, target_names: list[str], corr_types: list[str], ci_level: float) -> pl.DataFrame:
    """Rows (segment, corr type) per target and paired difference whose measures ran
    (:func:`~retrieval_response.measures.claims.paired_differences`).

    A row exists for the segments where both measures have a row.
    """
    parts = []
    for target in target_names:
        for first, second in paired_differences():
            if (target, first) not in boots or (target, second) not in boots:
                continue
            seg_1, n_1, value_1, boot_1 = boots[target, first]
            seg_2, n_2, value_2, boot_2 = boots[target, second]
            seg, i_1, i_2 = np.intersect1d(seg_1, seg_2, assume_unique=True, return_indices=True)
            diff = boot_1[i_1] - boot_2[i_2]
            low, high = percentile_interval(diff, ci_level)
            columns = {
                "target": target, "n_samples": np.minimum(n_1[i_1], n_2[i_2]), "difference": f"{first}-{second}",
                "value": value_1[i_1] - value_2[i_2], "ci_low": low, "ci_high": high,
                "share_positive": share_positive(diff),
            }
            parts.append(_long_table(seg, columns, corr_types))
    if not parts:
        return pl.DataFrame(schema={c: _dtype(c) for c in ("seg", *DIFFERENCE_COLUMNS)})
    return pl.concat(parts)


def _resample_table(boots: dict, corr_types: list[str], kept: list[str]) -> pl.DataFrame:
    """Rows (segment, target, measure, corr type in ``kept``) with the list of resampled correlations."""
    schema = {"seg": pl.Int64, "target": pl.String, "measure": pl.String, "corr_type": pl.String,
              "resamples": pl.List(pl.Float64)}
    parts = [pl.DataFrame(schema=schema)]
    for (target, measure), (seg, _, _, boot) in boots.items():
        for corr_type in kept:
            draws = boot[:, corr_types.index(corr_type), :]
            parts.append(pl.DataFrame({
                "seg": np.asarray(seg, np.int64), "target": [target] * len(seg), "measure": [measure] * len(seg),
                "corr_type": [corr_type] * len(seg), "resamples": draws.tolist(),
            }, schema=schema))
    return pl.concat(parts)


def write_analysis(correlations: pl.DataFrame, differences: pl.DataFrame, correlations_path: str | os.PathLike,
                   differences_path: str | os.PathLike) -> None:
    """Write both tables as zstd Parquet, atomically."""
    write_parquet(correlations, correlations_path)
    write_parquet(differences, differences_path)
