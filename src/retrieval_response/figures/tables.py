"""Table preparation shared by every figure kind: column checks, targets, the ``group`` of a row
(subset and finer keys), segments below the minimum, undefined values, and the order of groups,
segments and measures."""

from __future__ import annotations

import polars as pl

from retrieval_response.analysis.correlation_tables import TARGETS
from retrieval_response.analysis.segments import FINER_KEYS, assign_segments, segment_keys, segment_sizes
from retrieval_response.figures.manifest import Manifest

MEASURE_ORDER: tuple[str, ...] = ("F", "F_e", "F_e_partner", "T", "T_u", "nDCG", "nDCG@K", "P", "R")
"""Forest-plot rows, top to bottom; measures not listed follow in name order."""
FIT_SEGMENTS: tuple[str, ...] = ("narrow", "wide")
UNDEFINED = "correlation undefined (fewer than 2 samples, or the measure or the target is constant)"
CORRELATION_COLUMNS = ("E", "subset", "segment", "n", "measure", "corr_type", "value")
DIFFERENCE_COLUMNS = ("E", "subset", "segment", "n", "difference", "corr_type", "value", "ci_low", "ci_high")
FOREST_COLUMNS = ("ci_low", "ci_high", "value_crossfit")


def require(table: pl.DataFrame, columns, name: str) -> None:
    """ValueError naming ``name`` and the missing ones when ``table`` lacks some of ``columns``."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {', '.join(missing)}")


def finer_keys_of(table: pl.DataFrame) -> list[str]:
    """The finer segment keys (level, Nc, Np) that ``table`` has as columns."""
    return [k for k in FINER_KEYS if k in table.columns]


def with_group(table: pl.DataFrame, finer: list[str]) -> pl.DataFrame:
    """Add ``group``: the subset, then each finer key as "key value" (e.g. "Hp, Np 5")."""
    parts = [pl.col("subset").cast(pl.String)] + [pl.format(f"{k} {{}}", pl.col(k)) for k in finer]
    return table.with_columns(group=pl.concat_str(parts, separator=", "))


def prepare_table(table: pl.DataFrame, columns, name: str) -> pl.DataFrame:
    """``table`` with ``target`` (``grade`` where the table has none) and ``group`` columns.

    Rejects missing ``columns`` and targets outside :data:`TARGETS` (ValueError naming ``name``).
    """
    require(table, columns, name)
    if "target" not in table.columns:
        table = table.with_columns(target=pl.lit("grade"))
    unknown = sorted(set(table["target"].unique().to_list()) - set(TARGETS), key=str)
    if unknown:
        raise ValueError(f"{name}: target {unknown[0]!r} outside {', '.join(TARGETS)}")
    return with_group(table, finer_keys_of(table))


def targets_of(table: pl.DataFrame) -> list[str]:
    """The targets of ``table``, in :data:`TARGETS` order."""
    present = set(table["target"].to_list())
    return [t for t in TARGETS if t in present]


def is_undefined(column: str) -> pl.Expr:
    """True where ``column`` is null or NaN."""
    return pl.col(column).is_null() | pl.col(column).cast(pl.Float64).is_nan()


def reason_of(table: pl.DataFrame) -> pl.Expr:
    """``reason``: the row's ``null_reason`` when the table has one, else :data:`UNDEFINED`."""
    if "null_reason" in table.columns:
        return pl.col("null_reason").fill_null(UNDEFINED).alias("reason")
    return pl.lit(UNDEFINED).alias("reason")


def small_segments(graded: pl.DataFrame, segmentation: str, finer: list[str], min_segment_samples: int) -> pl.DataFrame:
    """Segments (E, subset, finer keys, segment) with fewer than ``min_segment_samples`` graded
    samples, with their size ``n`` and ``group``: the segments the analysis leaves out."""
    keys = segment_keys(finer)
    sizes = segment_sizes(assign_segments(graded, segmentation), keys, min_segment_samples)
    return with_group(sizes.filter(~pl.col("kept")).select(*keys, "n"), finer)


def record_small(manifest: Manifest, small: pl.DataFrame, segmentation: str, finer: list[str]) -> None:
    """Record the segments of ``small`` as left out of every figure of ``segmentation``."""
    keys = segment_keys(finer)
    reason = f"segment with n < {manifest.min_segment_samples} graded samples"
    manifest.leave_out_rows(f"{segmentation} segments", small.select(*keys, "n", reason=pl.lit(reason)).sort(keys))


def split_undefined(rows: pl.DataFrame, item: str, scope: str, manifest: Manifest) -> pl.DataFrame:
    """Record the rows of ``rows`` with a null value as left out of ``scope``, one entry per
    (target, correlation type, subset, segment, reason) listing the measures (or differences)
    and embedders concerned; return the other rows."""
    keys = ["target", "corr_type", "group", "segment", "reason"]
    undefined = (
        rows.filter(is_undefined("value")).with_columns(reason_of(rows))
        .group_by(keys).agg(pl.col(item).unique().sort(), pl.col("E").unique().sort())
        .sort(keys).rename({"group": "subset"})
    )
    manifest.leave_out_rows(scope, undefined)
    return rows.filter(~is_undefined("value"))


def nothing_to_draw(manifest: Manifest, name: str, rows: pl.DataFrame) -> None:
    """Record figure ``name`` as not drawn (every value undefined, or no segment at all); return None."""
    reason = ("every correlation undefined" if rows.height
              else f"no segment with n >= {manifest.min_segment_samples} graded samples")
    manifest.leave_out(name, f"figure not drawn: {reason}")


def ordered_groups(rows: pl.DataFrame) -> list[str]:
    """The groups of ``rows`` by subset, then finer keys."""
    finer = finer_keys_of(rows)
    return rows.select("group", "subset", *finer).unique().sort("subset", *finer)["group"].to_list()


def ratio_order(segments) -> list[str]:
    """The distinct K/Np segment labels of ``segments``, by value."""
    return sorted(set(segments), key=float)


def ordered_measures(names) -> list[str]:
    """``names`` in :data:`MEASURE_ORDER`, unknown names last in name order."""
    names = set(names)
    return [m for m in MEASURE_ORDER if m in names] + sorted(names - set(MEASURE_ORDER))


def first_corr_type(table: pl.DataFrame, corr_types: list[str]) -> str:
    """The first of ``corr_types`` that ``table`` has (else its first in name order)."""
    present = sorted(table["corr_type"].unique().to_list())
    return next((c for c in corr_types if c in present), present[0])


def n_range(sizes: pl.Series) -> str:
    """"lowest-highest" of ``sizes`` (one number when they agree)."""
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low}" if low == high else f"{low}-{high}"
