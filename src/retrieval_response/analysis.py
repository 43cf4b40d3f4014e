"""The analysis: correlations of retrieval measures with the grade, per segment (SPEC 3, 4, 7).

Input: a graded table with at least ``id, E, Nc, Np, K, inK, grade`` (grade null = ungraded:
left out of the correlations, counted in ``n_ungraded``); optional ``subset`` (else
``id.split('-')[0]``), ``np_2K`` (positives in the top 2K) or a ``ranked`` table to count it.

Output of :func:`run_analysis`, one pair of tables per segmentation:

**correlations** (``results/analysis/correlations_<segmentation>.parquet``), one row per
segment x measure x correlation type:
``segmentation, E, subset, [finer keys], segment, n, n_ungraded, measure, corr_type, value,
alpha, alpha_rule, value_crossfit, ci_low, ci_high``.
``n`` = graded samples that entered this measure's correlation (``F_e_partner`` drops samples
without a 2K partner); ``value`` = the correlation, for measures with alpha the maximum over the
grid; ``alpha`` = the first grid alpha reaching it (null without alpha); ``alpha_rule`` says how
alpha was chosen (e.g. ``first max over l350^0.95 (702 values)``); ``value_crossfit`` = alpha
chosen on one half of the query ids, correlation on the other, and the reverse, averaged (for
measures without alpha it equals ``value``); ``ci_low, ci_high`` = percentile bootstrap interval
over query-id resamples, at the alpha chosen on the full data (alpha is not re-chosen inside a
resample), null when ``bootstrap_resamples`` = 0.

**differences**, one row per segment x difference x correlation type:
``segmentation, E, subset, [finer keys], segment, n, difference, corr_type, value, ci_low,
ci_high, share_positive``; ``difference`` "X-Y" = corr(X) - corr(Y) (same resamples for both:
paired), ``share_positive`` = share of resamples where it is > 0.

Measure names say the variant: ``F_e`` counts np_2K in the ranking, ``F_e_partner`` is the
paper's 2K-partner lookup; ``nDCG`` is the paper's, ``nDCG@K`` the standard one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import polars as pl

from . import measures as measures_module
from .atomic import write_parquet
from .bootstrap import percentile_interval, resample_weights, resampled_tables, share_positive
from .correlations import CORR_TYPES, first_max, table_correlations
from .crossfit import crossfit, query_halves
from .errors import InputError
from .measures import MEASURES, add_features
from .segments import assign_segments, segment_keys, segment_sizes

alpha_grid = measures_module.alpha_grid

REQUIRED_COLUMNS = ("id", "E", "Nc", "Np", "K", "inK", "grade")
DIFFERENCES = (("T", "F"), ("T_u", "T"), ("nDCG", "F"), ("F_e", "F"), ("F_e_partner", "F"), ("T", "nDCG"))
"""Paired differences reported when both measures were computed."""


@dataclass
class _Prepared:
    """Graded rows of kept segments with integer codes, and the kept segments."""

    rows: pl.DataFrame  # seg, q, grade_index, half, feature columns
    segments: pl.DataFrame  # seg, segment keys, n, n_ungraded
    grade_values: np.ndarray
    query_strata: np.ndarray


def default_measures(graded: pl.DataFrame, ranked: pl.DataFrame | None = None) -> list[str]:
    """F, one F_e variant (counted in the ranking when ``ranked`` or ``np_2K`` is there, else
    the paper's partner lookup), T, T_u, nDCG, nDCG@K, P, R."""
    estimated = "F_e" if ranked is not None or "np_2K" in graded.columns else "F_e_partner"
    return ["F", estimated, "T", "T_u", "nDCG", "nDCG@K", "P", "R"]


def _prepare(graded, ranked, segmentation, finer_keys, min_segment_samples, seed) -> _Prepared:
    for column in REQUIRED_COLUMNS:
        if column not in graded.columns:
            raise InputError("graded table", f"column {column}", "required by the analysis")
    samples = assign_segments(add_features(graded, ranked), segmentation)
    keys = segment_keys(finer_keys)
    sizes = segment_sizes(samples, keys, min_segment_samples)
    kept = (
        sizes.filter("kept")
        .drop("kept")
        .sort([*keys[:-1], pl.col("segment").cast(pl.Float64, strict=False), "segment"])
        .with_row_index("seg")
        .with_columns(pl.col("seg").cast(pl.Int64))
    )
    rows = samples.filter(pl.col("grade").is_not_null()).join(kept.select(*keys, "seg"), on=keys, how="inner")
    grade_values = np.unique(rows["grade"].to_numpy().astype(np.float64))
    queries = rows.group_by("id").agg(pl.col("subset").first()).sort("id")
    half_a = query_halves(queries["id"].to_numpy(), queries["subset"].to_numpy(), seed)
    queries = queries.with_row_index("q").with_columns(pl.col("q").cast(pl.Int64), half=pl.Series(np.where(half_a, 0, 1)))
    rows = rows.join(queries.select("id", "q", "half"), on="id", how="left").with_columns(
        grade_index=pl.Series(np.searchsorted(grade_values, rows["grade"].to_numpy().astype(np.float64)))
    )
    return _Prepared(rows, kept, grade_values, queries["subset"].to_numpy())


@dataclass
class _MeasureCells:
    """One measure's rows collapsed into cells (distinct feature tuples) per segment."""

    features: dict[str, np.ndarray]  # per cell
    cell_start: np.ndarray  # (S+1,) cell range of each segment
    counts: np.ndarray  # (cells, 2 halves, G)
    row_seg: np.ndarray  # per row, sorted by segment
    row_q: np.ndarray
    row_cell: np.ndarray
    row_grade: np.ndarray
    grade_values: np.ndarray


def _measure_cells(prepared: _Prepared, measure) -> _MeasureCells:
    columns = list(measure.features)
    rows = prepared.rows.select("seg", "q", "half", "grade_index", *columns).drop_nulls(columns)
    cells = rows.select("seg", *columns).unique().sort(["seg", *columns]).with_row_index("cell")
    rows = rows.join(cells, on=["seg", *columns], how="left").sort("seg", "cell")
    n_cells, n_grades = len(cells), len(prepared.grade_values)
    cell = rows["cell"].to_numpy().astype(np.int64)
    half = rows["half"].to_numpy().astype(np.int64)
    grade = rows["grade_index"].to_numpy().astype(np.int64)
    counts = np.bincount((cell * 2 + half) * n_grades + grade, minlength=n_cells * 2 * n_grades)
    n_segments = len(prepared.segments)
    return _MeasureCells(
        features={c: cells[c].to_numpy() for c in columns},
        cell_start=np.searchsorted(cells["seg"].to_numpy(), np.arange(n_segments + 1)),
        counts=counts.reshape(n_cells, 2, n_grades).astype(np.float64),
        row_seg=rows["seg"].to_numpy(),
        row_q=rows["q"].to_numpy(),
        row_cell=cell,
        row_grade=grade,
        grade_values=prepared.grade_values,
    )


def _segment_values(measure, cells: _MeasureCells, lo: int, hi: int, grid: np.ndarray) -> np.ndarray:
    return measure.evaluate({c: v[lo:hi] for c, v in cells.features.items()}, grid)


def _correlate_measure(measure, cells: _MeasureCells, grid, corr_types):
    """Per segment and corr type: value, alpha index (-1 = none), cross-fitted value, n."""
    n_segments = len(cells.cell_start) - 1
    shape = (n_segments, len(corr_types))
    value, value_crossfit = np.full(shape, np.nan), np.full(shape, np.nan)
    alpha_index = np.full(shape, -1)
    n = np.zeros(n_segments, dtype=np.int64)
    measure_grid = grid if measure.has_alpha else np.zeros(1)
    for s in range(n_segments):
        lo, hi = cells.cell_start[s], cells.cell_start[s + 1]
        if hi == lo:
            continue
        halves = cells.counts[lo:hi]
        tables = np.stack([halves.sum(axis=1), halves[:, 0], halves[:, 1]])
        n[s] = int(tables[0].sum())
        curves = table_correlations(_segment_values(measure, cells, lo, hi, measure_grid), tables, cells.grade_values, corr_types)
        for k, corr_type in enumerate(corr_types):
            best, index = first_max(curves[corr_type][0])
            value[s, k], alpha_index[s, k] = best, index
            if measure.has_alpha:
                value_crossfit[s, k] = crossfit(curves[corr_type][1], curves[corr_type][2])[0]
            else:
                value_crossfit[s, k] = best
    return value, alpha_index, value_crossfit, n


def _bootstrap_measure(measure, cells: _MeasureCells, grid, corr_types, alpha_index, weights) -> np.ndarray:
    """(S, corr types, R) correlations on the resamples, at the alpha chosen on the full data."""
    n_segments = len(cells.cell_start) - 1
    n_resamples = weights.shape[0]
    out = np.full((n_segments, len(corr_types), n_resamples), np.nan)
    row_start = np.searchsorted(cells.row_seg, np.arange(n_segments + 1))
    for s in range(n_segments):
        lo, hi = cells.cell_start[s], cells.cell_start[s + 1]
        chosen = alpha_index[s]
        if hi == lo or (chosen < 0).all():
            continue
        r0, r1 = row_start[s], row_start[s + 1]
        queries, local_q = np.unique(cells.row_q[r0:r1], return_inverse=True)
        tables = resampled_tables(
            weights[:, queries], local_q, cells.row_cell[r0:r1] - lo, cells.row_grade[r0:r1], hi - lo, cells.counts.shape[-1]
        )
        distinct = np.unique(chosen[chosen >= 0])
        grid_values = grid[distinct] if measure.has_alpha else np.zeros(1)
        curves = table_correlations(_segment_values(measure, cells, lo, hi, grid_values), tables, cells.grade_values, corr_types)
        for k, corr_type in enumerate(corr_types):
            if chosen[k] >= 0:
                out[s, k] = curves[corr_type][:, int(np.searchsorted(distinct, chosen[k]))]
    return out


def run_analysis(
    graded: pl.DataFrame,
    *,
    segmentation: str,
    alpha_grid: str | np.ndarray,
    corr_types=CORR_TYPES,
    min_segment_samples: int = 300,
    finer_keys=(),
    bootstrap_resamples: int = 1000,
    seed: int = 0,
    ranked: pl.DataFrame | None = None,
    measures: list[str] | None = None,
    ci_level: float = 0.95,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Correlations and paired differences tables (see the module docstring for the columns).

    ``alpha_grid``: a spec for :func:`alpha_grid` or the sorted grid itself; ``segmentation``
    "fit" or "ratio"; segments with fewer than ``min_segment_samples`` graded samples are left
    out; ``measures`` defaults to :func:`default_measures`. Halves and resamples depend only on
    ``seed`` and the query ids.
    """
    grid_spec = alpha_grid if isinstance(alpha_grid, str) else "a given grid"
    grid = measures_module.alpha_grid(alpha_grid) if isinstance(alpha_grid, str) else np.asarray(alpha_grid, np.float64)
    corr_types = list(corr_types)
    measure_names = measures or default_measures(graded, ranked)
    unknown = [m for m in measure_names if m not in MEASURES]
    if unknown:
        raise ValueError(f"measures {unknown}: expected names from {sorted(MEASURES)}")
    prepared = _prepare(graded, ranked, segmentation, finer_keys, min_segment_samples, seed)
    weights = resample_weights(prepared.query_strata, bootstrap_resamples, seed) if bootstrap_resamples else None

    correlation_parts, boots = [], {}
    for name in measure_names:
        measure = MEASURES[name]
        cells = _measure_cells(prepared, measure)
        value, alpha_index, value_crossfit, n = _correlate_measure(measure, cells, grid, corr_types)
        boot = (
            _bootstrap_measure(measure, cells, grid, corr_types, alpha_index, weights)
            if weights is not None
            else np.full(value.shape + (0,), np.nan)
        )
        boots[name] = (value, boot)
        low, high = percentile_interval(boot, ci_level)
        alpha = np.where((alpha_index >= 0) & measure.has_alpha, grid[np.maximum(alpha_index, 0)], np.nan)
        correlation_parts.append(
            _long_table(
                {
                    "n": np.repeat(n, len(corr_types)),
                    "measure": name,
                    "value": value,
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
    correlations = _finish(pl.concat(correlation_parts), segments, ["segmentation", *keys, "n", "n_ungraded"], "measure")
    differences = _finish(_differences(boots, corr_types, ci_level), segments, ["segmentation", *keys, "n"], "difference")
    return correlations, differences


def _long_table(columns: dict, corr_types: list[str]) -> pl.DataFrame:
    """Rows (segment, corr type) from (S, corr types) arrays and scalars."""
    n_segments = next(v.shape[0] for v in columns.values() if isinstance(v, np.ndarray) and v.ndim == 2)
    size = n_segments * len(corr_types)
    data = {
        "seg": np.repeat(np.arange(n_segments, dtype=np.int64), len(corr_types)),
        "corr_type": list(corr_types) * n_segments,
    }
    for key, v in columns.items():
        data[key] = v.reshape(-1) if isinstance(v, np.ndarray) else [v] * size
    strings = {key: pl.String for key in ("corr_type", "measure", "difference", "alpha_rule") if key in data}
    return pl.DataFrame(data, schema_overrides=strings, strict=False).with_columns(
        pl.col(pl.Float64).fill_nan(None)
    )


def _differences(boots: dict, corr_types: list[str], ci_level: float) -> pl.DataFrame:
    """Rows (segment, corr type) per difference in :data:`DIFFERENCES` whose two measures ran."""
    parts = []
    for first, second in DIFFERENCES:
        if first not in boots or second not in boots:
            continue
        (value_1, boot_1), (value_2, boot_2) = boots[first], boots[second]
        diff = boot_1 - boot_2
        low, high = percentile_interval(diff, ci_level)
        columns = {"difference": f"{first}-{second}", "value": value_1 - value_2, "ci_low": low, "ci_high": high}
        parts.append(_long_table({**columns, "share_positive": share_positive(diff)}, corr_types))
    if not parts:
        schema = {"seg": pl.Int64, "corr_type": pl.String, "difference": pl.String, "value": pl.Float64,
                  "ci_low": pl.Float64, "ci_high": pl.Float64, "share_positive": pl.Float64}
        return pl.DataFrame(schema=schema)
    return pl.concat(parts)


def _finish(table: pl.DataFrame, segments: pl.DataFrame, leading: list[str], name: str) -> pl.DataFrame:
    """Attach the segment keys, order columns and rows."""
    merged = table.join(segments, on="seg", how="left", suffix="_segment")
    if "n_segment" in merged.columns:
        merged = merged.drop("n_segment")
    rest = [c for c in table.columns if c not in ("seg", "corr_type", name, *leading)]
    return merged.sort("seg", maintain_order=True).select(*leading, name, "corr_type", *rest)


def write_analysis(correlations: pl.DataFrame, differences: pl.DataFrame, correlations_path: str | os.PathLike,
                   differences_path: str | os.PathLike) -> None:
    """Write both tables as zstd Parquet, atomically."""
    write_parquet(correlations, correlations_path)
    write_parquet(differences, differences_path)
