"""The figures' inputs: the analysis tables (correlations, differences, segments) checked and
prepared for every figure kind: column checks, targets, the ``group`` of a row (subset and finer
keys), segments below the minimum or never run (:class:`Gaps`), undefined values, and the order of
groups, segments and measures."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from retrieval_response.analysis.segments import FINER_KEYS, segment_keys, too_few
from retrieval_response.analysis.targets import NAMES
from retrieval_response.figures.labels import NOT_RUN, UNDEFINED
from retrieval_response.figures.manifest import Manifest
from retrieval_response.measures.registry import MEASURES

FIT_SEGMENTS: tuple[str, ...] = ("narrow", "wide")
UNDEFINED_REASON = "fewer than 2 samples, or the measure or the target is constant"
"""Why a correlation is undefined when its table gives no ``null_reason``."""
CORRELATION_COLUMNS = ("E", "subset", "segment", "n_samples", "measure", "corr_type", "value")
DIFFERENCE_COLUMNS = ("E", "subset", "segment", "n_samples", "difference", "corr_type", "value", "ci_low", "ci_high")
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

    Rejects missing ``columns`` and targets outside :data:`NAMES` (ValueError naming ``name``).
    """
    require(table, columns, name)
    if "target" not in table.columns:
        table = table.with_columns(target=pl.lit("grade"))
    unknown = sorted(set(table["target"].unique().to_list()) - set(NAMES), key=str)
    if unknown:
        raise ValueError(f"{name}: target {unknown[0]!r} outside {', '.join(NAMES)}")
    return with_group(table, finer_keys_of(table))


def targets_of(table: pl.DataFrame) -> list[str]:
    """The targets of ``table``, in :data:`NAMES` order."""
    present = set(table["target"].to_list())
    return [t for t in NAMES if t in present]


def is_undefined(column: str) -> pl.Expr:
    """True where ``column`` is null or NaN."""
    return pl.col(column).is_null() | pl.col(column).cast(pl.Float64).is_nan()


def reason_of(table: pl.DataFrame) -> pl.Expr:
    """``reason``: "undefined: " and the row's ``null_reason`` when the table has one, else
    :data:`UNDEFINED_REASON`."""
    why = pl.col("null_reason").fill_null(UNDEFINED_REASON) if "null_reason" in table.columns \
        else pl.lit(UNDEFINED_REASON)
    return pl.format(f"{UNDEFINED}: {{}}", why).alias("reason")


def small_reason(minimum: int, what: str) -> str:
    """The left-out reason of an item without any segment of at least ``minimum`` samples:
    "n < <minimum>: <what>"."""
    return f"{too_few(minimum)}: {what.format(minimum=minimum)}"


def record_small(manifest: Manifest, small: pl.DataFrame, segmentation: str, finer: list[str]) -> None:
    """Record the rows of ``small`` (the segments table's rows not kept) as left out of every figure
    of ``segmentation``: one entry per segment, target, n_samples and reason, listing the measures."""
    keys = [*segment_keys(finer), "target", "n_samples", "reason"]
    entries = small.group_by(keys).agg(pl.col("measure").unique().sort()).sort(keys)
    manifest.leave_out_rows(f"{segmentation} segments", entries)


def absent_segments(segments: pl.DataFrame, finer: list[str]) -> pl.DataFrame:
    """Segments (E, subset, finer keys, segment, ``group``) without any sample, for every ranker
    of ``segments`` (a segments table) and every (subset, finer keys, segment) that some ranker
    has: the combinations that were never run, which figures do not show as left out."""
    keys = segment_keys(finer)
    present = segments.select(keys).unique()
    places = [k for k in keys if k != "E"]
    grid = present.select("E").unique().join(present.select(places).unique(), how="cross")
    return with_group(grid.join(present, on=keys, how="anti").sort(keys), finer)


def whole_groups(absent: pl.DataFrame, present_segments: pl.DataFrame) -> pl.DataFrame:
    """(E, group) pairs of ``absent`` that miss every segment the group has in ``present_segments``
    (columns group, segment): a ranker never run on that subset."""
    per_group = present_segments.select("group", "segment").unique().group_by("group").len("all")
    return (absent.group_by("E", "group").len("missing").join(per_group, on="group")
            .filter(pl.col("missing") == pl.col("all")).select("E", "group").sort("group", "E"))


@dataclass(frozen=True)
class Gaps:
    """The segments of one segmentation a figure cannot draw: ``small`` (the segments table's rows
    not kept: segment keys, ``group``, target, measure or difference, n_samples, reason), ``absent``
    (segments without any sample: not run) and ``never_run`` (E, group) pairs without any sample
    at all. ``sizes``: every row of the segments table, kept or not, with ``group``."""

    small: pl.DataFrame
    absent: pl.DataFrame
    never_run: pl.DataFrame
    sizes: pl.DataFrame


def gaps_of(segments: pl.DataFrame) -> Gaps:
    """The :class:`Gaps` of a segments table (``analysis.samples.segment_table``)."""
    finer = finer_keys_of(segments)
    keys = segment_keys(finer)
    sizes = with_group(segments, finer)
    absent = absent_segments(segments, finer)
    present = with_group(segments.select(keys).unique(), finer)
    return Gaps(sizes.filter(~pl.col("kept")), absent, whole_groups(absent, present), sizes)


def target_gaps(gaps: Gaps, target: str) -> Gaps:
    """``gaps`` with the rows of ``target`` only."""
    of_target = pl.col("target") == target
    return Gaps(gaps.small.filter(of_target), gaps.absent, gaps.never_run, gaps.sizes.filter(of_target))


def difference_gaps(gaps: Gaps, target: str, differences: list[str]) -> Gaps:
    """``gaps`` of ``target`` for the differences "X-Y" of ``differences``: a difference is left
    out of a segment where X or Y is (the reason of X where X is, else of Y's), with n_samples the
    smaller of the two, as the differences table counts it."""
    keys = [*segment_keys(finer_keys_of(gaps.sizes)), "group"]
    sizes = gaps.sizes.filter(pl.col("target") == target).select(*keys, "target", "measure", "n_samples", "kept", "reason")
    parts = []
    for difference in differences:
        first, second = difference.split("-", 1)
        pair = sizes.filter(measure=first).join(sizes.filter(measure=second), on=[*keys, "target"], suffix="_2")
        parts.append(pair.select(
            *keys, "target", difference=pl.lit(difference), n_samples=pl.min_horizontal("n_samples", "n_samples_2"),
            kept=pl.col("kept") & pl.col("kept_2"),
            reason=pl.when(pl.col("kept")).then(pl.col("reason_2")).otherwise(pl.col("reason"))))
    schema = {**{k: sizes.schema[k] for k in (*keys, "target")}, "difference": pl.String, "n_samples": pl.Int64,
              "kept": pl.Boolean, "reason": pl.String}
    table = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    return Gaps(table.filter(~pl.col("kept")), gaps.absent, gaps.never_run, table)


def record_absent(manifest: Manifest, gaps: Gaps, segmentation: str) -> None:
    """Record ``gaps.absent`` in ``manifest.not_run``: one entry per never-run (E, group), one
    per segment for the other absent segments."""
    for row in gaps.never_run.iter_rows(named=True):
        manifest.not_run.append({"segmentation": segmentation, "E": row["E"], "subset": row["group"]})
    rest = gaps.absent.join(gaps.never_run, on=["E", "group"], how="anti").sort("group", "E", "segment")
    manifest.not_run.extend({"segmentation": segmentation, "E": row["E"], "subset": row["group"],
                             "segment": row["segment"]} for row in rest.iter_rows(named=True))


def not_run_note(never_run: pl.DataFrame, groups) -> str:
    """"not run: PML3 on Hp, Hs" for the (E, group) pairs of ``never_run`` among ``groups``;
    empty when there are none."""
    shown = never_run.filter(pl.col("group").is_in(list(groups)))
    if shown.is_empty():
        return ""
    by_ranker = shown.group_by("E").agg(pl.col("group").unique().sort()).sort("E")
    return f"{NOT_RUN}: " + "; ".join(f"{row['E']} on {', '.join(row['group'])}"
                                      for row in by_ranker.iter_rows(named=True))


def split_undefined(rows: pl.DataFrame, item: str, scope: str, manifest: Manifest) -> pl.DataFrame:
    """Record the rows of ``rows`` with a null value as left out of ``scope``, one entry per
    (target, correlation type, subset, segment, reason) listing the measures (or differences)
    and rankers concerned; return the other rows."""
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
    reason = (f"{UNDEFINED}: every correlation" if rows.height
              else small_reason(manifest.min_segment_samples, "no segment with at least {minimum} graded samples"))
    manifest.leave_out(name, f"{reason}; figure not drawn")


def ordered_groups(rows: pl.DataFrame) -> list[str]:
    """The groups of ``rows`` by subset, then finer keys."""
    finer = finer_keys_of(rows)
    return rows.select("group", "subset", *finer).unique().sort("subset", *finer)["group"].to_list()


def ratio_order(segments) -> list[str]:
    """The distinct K/Np segment labels of ``segments``, by value."""
    return sorted(set(segments), key=float)


def ordered_measures(names) -> list[str]:
    """``names`` in the measure registry's order (:data:`~retrieval_response.measures.registry.MEASURES`:
    forest-plot rows, top to bottom), unknown names last in name order."""
    names = set(names)
    return [m for m in MEASURES if m in names] + sorted(names - set(MEASURES))


def first_corr_type(table: pl.DataFrame, corr_types: list[str]) -> str:
    """The first of ``corr_types`` that ``table`` has (else its first in name order)."""
    present = sorted(table["corr_type"].unique().to_list())
    return next((c for c in corr_types if c in present), present[0])


def n_range(sizes: pl.Series) -> str:
    """"lowest-highest" of ``sizes`` (one number when they agree)."""
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low}" if low == high else f"{low}-{high}"
