"""Which samples enter each correlation (docs/METHODS.md#segments): the measures and targets of
a table, every sample prepared with its features, segment, query code and cross-fitting half, and,
per (measure, target), how many samples each segment has and whether the analysis keeps it.

:func:`measure_sizes` is the one count: a (segment, target, measure) is kept when at least
``min_segment_samples`` samples have the measure's features and the target
(:func:`.segments.kept_and_reason`). The correlations (:mod:`.correlation_tables`) collapse the
segments it keeps into cells (:func:`measure_cells`); :func:`segment_table` writes it for every
segment, and the figures, the verdict and the replication's adjusted verdicts read that table
(:func:`table_sizes`) and count nothing themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from retrieval_response.analysis import targets as target_registry
from retrieval_response.analysis.correlations import tie_anchors
from retrieval_response.analysis.crossfit import query_halves
from retrieval_response.analysis.segments import assign_segments, kept_and_reason, segment_keys
from retrieval_response.infra.errors import InputError
from retrieval_response.measures.features import add_features
from retrieval_response.measures.judgments import JUDGMENT_COLUMNS
from retrieval_response.measures.registry import MEASURES

REQUIRED_COLUMNS = ("id", "E", "Nc", "Np", "K", "inK")
COUNT_PATH_MAX_VALUES = 16
"""Targets with at most this many distinct values use count tables; others the per-sample kernel."""
_FILE_ROW = "__file_row"
SEGMENT_COLUMNS = ("target", "measure", "n_samples", "n_missing_target", "kept", "reason")
"""Columns of the segments table after the segmentation and segment keys."""


@dataclass
class PreparedSamples:
    """Every sample with its segment and query codes, the segments, and the query strata."""

    rows: pl.DataFrame  # seg, q, half, feature columns, target columns
    segments: pl.DataFrame  # seg, segment keys
    query_strata: np.ndarray


def default_measures(graded: pl.DataFrame, ranked: pl.DataFrame | None = None) -> list[str]:
    """The registry's ``default`` measures in registry order (F, F_e, T, T_u, nDCG, nDCG@K, RR@K,
    AP@K, P, R, then the judgment measures): one F_e variant (counted in the ranking when
    ``ranked`` or ``np_2K`` is there, else the paper's partner lookup ``F_e_partner``), and a
    measure built from judgments only when its judgment column (``needs``) has a value and, for a
    ``binary`` measure (eRAG_MRR, eRAG_nDCG), when every value of that column is 0 or 1."""
    skipped = "F_e_partner" if ranked is not None or "np_2K" in graded.columns else "F_e"
    values = {c: graded[c].explode().cast(pl.Float64).fill_nan(None).drop_nulls()
              for c in JUDGMENT_COLUMNS if c in graded.columns}
    judged = {c for c, v in values.items() if v.len() > 0}
    binary = {c for c in judged if values[c].is_in([0.0, 1.0]).all()}
    return [name for name, m in MEASURES.items()
            if m.default and name != skipped and (m.needs is None or m.needs in (binary if m.binary else judged))]


def default_targets(graded: pl.DataFrame) -> list[str]:
    """Every target of :data:`.targets.NAMES` that is a column of ``graded`` with at least one value (NaN is no value)."""
    return [
        name for name in target_registry.NAMES
        if name in graded.columns and graded[name].cast(pl.Float64).fill_nan(None).drop_nulls().len() > 0
    ]


def why_no_target(graded: pl.DataFrame) -> str:
    """Why the targets of ``graded`` have no value, in words: per target column present, the counts
    of its status column by status (``grade: status unparseable 50``; an LLM grade's failures), else
    that it is null throughout; "no target column" when there is none."""
    said, parts = set(), []
    for name, target in target_registry.TARGETS.items():
        if name not in graded.columns:
            continue
        if target.status in graded.columns:
            if target.status not in said:
                counts = graded[target.status].fill_null("null").value_counts(sort=True)
                parts.append(f"{name}: {target.status} " + ", ".join(f"{s} {n}" for s, n in counts.iter_rows()))
                said.add(target.status)
        else:
            parts.append(f"{name}: null throughout")
    return "; ".join(parts) or "no target column"


def resolve_targets(graded: pl.DataFrame, targets) -> list[str]:
    """The targets to correlate: ``targets`` checked against :data:`.targets.NAMES` and the table's
    columns, or every target with a value when None (:class:`InputError` when there is none, or
    when a target column is neither numeric nor boolean)."""
    for name in target_registry.NAMES:
        dtype = graded.schema.get(name)
        if dtype is not None and not (dtype.is_numeric() or dtype in (pl.Null, pl.Boolean)):
            raise InputError("graded table", f"column {name}", f"a target must be numeric or boolean, not {dtype}")
    if targets is None:
        found = default_targets(graded)
        if not found:
            raise InputError("graded table", "targets", f"no target has a value on any of its {graded.height} samples "
                             f"({why_no_target(graded)}): there is nothing to correlate the measures with")
        return found
    unknown = [t for t in targets if t not in target_registry.NAMES]
    if unknown:
        raise ValueError(f"targets {unknown}: expected names from {list(target_registry.NAMES)}")
    for name in targets:
        if name not in graded.columns:
            raise InputError("graded table", f"column {name}", "required by analysis.targets")
    return list(dict.fromkeys(targets))


def _target_column(samples: pl.DataFrame, name: str, tie_ulps: int) -> pl.Series:
    """The target as float64, NaN as null, values within ``tie_ulps`` anchored (see tie_anchors)."""
    column = samples[name].cast(pl.Float64).fill_nan(None)
    present = column.is_not_null().to_numpy()
    values = np.full(len(column), np.nan)
    values[present] = tie_anchors(column.drop_nulls().to_numpy(), tie_ulps)
    return pl.Series(name, values).fill_nan(None)


def prepare_samples(graded, ranked, segmentation, finer_keys, targets, tie_ulps, seed) -> PreparedSamples:
    """Every sample with its features, segment (of ``segmentation``), query code ``q`` and
    cross-fitting half, the targets anchored within ``tie_ulps``; the segments; the subset of
    each query code (the bootstrap's strata)."""
    for column in REQUIRED_COLUMNS:
        if column not in graded.columns:
            raise InputError("graded table", f"column {column}", "required by the analysis")
    samples = assign_segments(add_features(graded.with_row_index(_FILE_ROW), ranked), segmentation)
    samples = samples.with_columns(_target_column(samples, name, tie_ulps) for name in targets)
    keys = segment_keys(finer_keys)
    segments = (
        samples.select(keys).unique()
        .sort([*keys[:-1], pl.col("segment").cast(pl.Float64, strict=False), "segment"])
        .with_row_index("seg")
        .with_columns(pl.col("seg").cast(pl.Int64))
    )
    queries = samples.group_by("id").agg(pl.col("subset").first()).sort("id")
    half_a = query_halves(queries["id"].to_numpy(), queries["subset"].to_numpy(), seed)
    queries = queries.with_row_index("q").with_columns(
        pl.col("q").cast(pl.Int64), half=pl.Series(np.where(half_a, 0, 1))
    )
    rows = samples.join(segments, on=keys, how="left").join(queries.select("id", "q", "half"), on="id", how="left")
    return PreparedSamples(rows, segments, queries["subset"].to_numpy())


@dataclass
class MeasureCells:
    """One (measure, target): its kept segments' rows collapsed into cells (distinct feature tuples).

    Segments are indexed 0..S-1 in the order of ``seg``; rows are sorted by (segment, cell).
    ``target_values`` (G,) and ``counts`` (cells, 2 halves, G) exist on the count path only.
    """

    seg: np.ndarray  # (S,) segment ids of the kept segments
    n_samples: np.ndarray  # (S,) samples in the correlation
    n_missing_target: np.ndarray  # (S,) samples with the measure's features but no target
    features: dict[str, np.ndarray]  # per cell
    cell_start: np.ndarray  # (S+1,) cell range of each segment
    row_start: np.ndarray  # (S+1,) row range of each segment
    row_cell: np.ndarray
    row_q: np.ndarray
    row_half: np.ndarray
    row_target: np.ndarray
    row_file: np.ndarray  # the row's position in the graded table
    target_values: np.ndarray | None
    counts: np.ndarray | None


def _measured(prepared: PreparedSamples, measure, target: str) -> pl.DataFrame:
    """The rows of ``prepared`` with every feature of ``measure``, the target as ``y``."""
    columns = list(measure.features)
    return prepared.rows.select("seg", "q", "half", _FILE_ROW, *columns, y=pl.col(target)).drop_nulls(columns)


def measure_sizes(prepared: PreparedSamples, measure, target: str, min_segment_samples: int) -> pl.DataFrame:
    """Per segment of ``prepared`` (every one, by ``seg``): ``n_samples`` = samples with the features of
    ``measure`` and ``target`` (those that enter the correlation), ``n_missing_target`` = samples
    with the features but no target, and ``kept``, ``reason`` (:func:`.segments.kept_and_reason`):
    the one place the analysis decides which segments it correlates."""
    counted = _measured(prepared, measure, target).group_by("seg").agg(
        n_samples=pl.col("y").is_not_null().sum().cast(pl.Int64), n_missing_target=pl.col("y").is_null().sum().cast(pl.Int64))
    return (
        prepared.segments.select("seg").join(counted, on="seg", how="left")
        .with_columns(pl.col("n_samples", "n_missing_target").fill_null(0))
        .with_columns(kept_and_reason(pl.col("n_samples"), min_segment_samples, pl.col("n_missing_target")))
        .sort("seg")
    )


def table_sizes(prepared: PreparedSamples, segments: pl.DataFrame, measure_name: str, target: str) -> pl.DataFrame:
    """:func:`measure_sizes`' frame for ``measure_name`` x ``target`` read from a segments table
    (:func:`segment_table`) of the segmentation and segment keys of ``prepared``, instead of counted
    again. :class:`InputError` when the table has no row for a segment of the samples."""
    keys = [c for c in prepared.segments.columns if c != "seg"]
    rows = segments.filter((pl.col("target") == target) & (pl.col("measure") == measure_name))
    sizes = prepared.segments.join(rows.select(*keys, "n_samples", "n_missing_target", "kept", "reason"), on=keys, how="left")
    if sizes["kept"].null_count():
        raise InputError("segments table", f"{measure_name} x {target}",
                         "has no row for some segment of the samples: written from another table or other settings")
    return sizes.select("seg", "n_samples", "n_missing_target", "kept", "reason").sort("seg")


def measure_cells(prepared: PreparedSamples, measure, target: str, sizes: pl.DataFrame) -> MeasureCells:
    """The samples of ``measure`` x ``target`` collapsed into cells, in the segments that ``sizes``
    (:func:`measure_sizes` or :func:`table_sizes`) keeps (:class:`MeasureCells`)."""
    columns = list(measure.features)
    measured = _measured(prepared, measure, target)
    sizes = sizes.filter(pl.col("kept")).select("seg", "n_samples", "n_missing_target").with_row_index("local")
    rows = measured.drop_nulls("y").join(sizes.select("seg", "local"), on="seg", how="inner")
    cells = rows.select("local", *columns).unique().sort(["local", *columns]).with_row_index("cell")
    rows = rows.join(cells, on=["local", *columns], how="left").sort("local", "cell")
    n_segments = len(sizes)
    target_values = np.unique(rows["y"].to_numpy())
    cell = rows["cell"].to_numpy().astype(np.int64)
    half = rows["half"].to_numpy().astype(np.int64)
    counts = None
    if len(target_values) > COUNT_PATH_MAX_VALUES:
        target_values = None
    else:
        index = np.searchsorted(target_values, rows["y"].to_numpy())
        n_cells, n_values = len(cells), len(target_values)
        counts = np.bincount((cell * 2 + half) * n_values + index, minlength=n_cells * 2 * n_values)
        counts = counts.reshape(n_cells, 2, n_values).astype(np.float64)
    return MeasureCells(
        seg=sizes["seg"].to_numpy(),
        n_samples=sizes["n_samples"].to_numpy(),
        n_missing_target=sizes["n_missing_target"].to_numpy(),
        features={c: cells[c].to_numpy() for c in columns},
        cell_start=np.searchsorted(cells["local"].to_numpy(), np.arange(n_segments + 1)),
        row_start=np.searchsorted(rows["local"].to_numpy(), np.arange(n_segments + 1)),
        row_cell=cell,
        row_q=rows["q"].to_numpy().astype(np.int64),
        row_half=half,
        row_target=rows["y"].to_numpy(),
        row_file=rows[_FILE_ROW].to_numpy().astype(np.int64),
        target_values=target_values,
        counts=counts,
    )


def segment_table(
    graded: pl.DataFrame,
    *,
    segmentation: str,
    min_segment_samples: int,
    finer_keys=(),
    ranked: pl.DataFrame | None = None,
    measures: list[str] | None = None,
    targets: list[str] | None = None,
) -> pl.DataFrame:
    """Which segments :func:`.correlation_tables.analysis_tables` correlates, and why not the others: one row per
    segment x target x measure (:data:`SEGMENT_COLUMNS` after the segmentation and segment keys),
    every segment with a sample, in segment order, then targets and measures in the order given.
    ``n``, ``n_missing_target``, ``kept`` and ``reason`` are :func:`measure_sizes`' (the counts
    the correlations table gives for its rows); the arguments are those of :func:`.correlation_tables.analysis_tables`.
    Figures and their manifest read this table and count nothing themselves."""
    measure_names = measures or default_measures(graded, ranked)
    target_names = resolve_targets(graded, targets)
    prepared = prepare_samples(graded, ranked, segmentation, finer_keys, target_names, 0, 0)
    parts = [
        measure_sizes(prepared, MEASURES[name], target, min_segment_samples)
        .with_columns(target=pl.lit(target), measure=pl.lit(name))
        for target in target_names for name in measure_names
    ]
    segments = prepared.segments.with_columns(segmentation=pl.lit(segmentation))
    return with_segment_keys(pl.concat(parts), segments, segment_keys(finer_keys), SEGMENT_COLUMNS)


def with_segment_keys(table: pl.DataFrame, segments: pl.DataFrame, keys: list[str], columns: tuple[str, ...]) -> pl.DataFrame:
    """``table`` (column ``seg``) with the segmentation and segment keys of ``segments`` before ``columns``;
    rows by segment, then in the order computed."""
    merged = table.join(segments, on="seg", how="left")
    return merged.sort("seg", maintain_order=True).select("segmentation", *keys, *columns)
