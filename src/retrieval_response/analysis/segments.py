"""Data segments for the correlations (docs/METHODS.md#segments).

A segment key is (E, subset, [finer keys...], segment) where ``segment`` is

- segmentation ``"fit"``: ``"narrow"`` when K < Np, ``"wide"`` when K >= Np;
- segmentation ``"all"``: ``"all"``, every sample in one segment (the verdict's third segment);
- segmentation ``"ratio"``: round(K/Np, 1) with Python's ``round`` on the float (so 0.25 -> 0.2,
  0.35 -> 0.3, 0.45 -> 0.5), written with one decimal, e.g. ``"0.5"``, ``"1.3"``.

``subset`` is the table's ``subset`` column (the workflow's analysis table holds a dataset's
configured subset there, else the paper's rule), else the paper's ``id.split('-')[0]``
(``Hp-e``, ``Hp-m``, ``Hp-h`` fall into ``Hp``); the finer key ``level`` is the id's full
prefix ``id.rsplit('-', 1)[0]`` (``Hp-e``), or the subset for an id without ``-``. Other finer
keys: ``Nc``, ``Np``.
"""

from __future__ import annotations

import polars as pl

SEGMENTATIONS = ("fit", "ratio")
VERDICT_SEGMENTATIONS = ("fit", "all")
"""The segmentations a verdict is given for: narrow and wide, and all samples together."""
FINER_KEYS = ("level", "Nc", "Np")


def with_subset_and_level(samples: pl.DataFrame) -> pl.DataFrame:
    """Add ``subset`` = id.split('-')[0] when absent and ``level`` = id.rsplit('-', 1)[0] (the
    subset when the id has no ``-``)."""
    out = samples
    if "subset" not in out.columns:
        out = out.with_columns(subset=pl.col("id").str.split("-").list.first())
    if "level" not in out.columns:
        out = out.with_columns(level=pl.when(pl.col("id").str.contains("-", literal=True))
                               .then(pl.col("id").str.replace(r"-[^-]*$", "")).otherwise(pl.col("subset")))
    return out


def ratio_label(K: int, Np: int) -> str:
    """round(K/Np, 1) with Python's float rounding, formatted with one decimal."""
    return f"{round(K / Np, 1):.1f}"


def segment_labels(samples: pl.DataFrame, segmentation: str) -> pl.Series:
    """The ``segment`` label of each row of a table with K and Np (see the module docstring)."""
    if segmentation == "fit":
        return samples.select(
            segment=pl.when(pl.col("K") < pl.col("Np")).then(pl.lit("narrow")).otherwise(pl.lit("wide"))
        )["segment"]
    if segmentation == "all":
        return pl.Series("segment", ["all"] * samples.height, dtype=pl.String)
    if segmentation == "ratio":
        pairs = samples.select(pl.col("K").cast(pl.Int64), pl.col("Np").cast(pl.Int64)).unique()
        labels = pairs.with_columns(
            segment=pl.Series([ratio_label(k, n) for k, n in pairs.iter_rows()], dtype=pl.String)
        )
        return (
            samples.select(pl.col("K").cast(pl.Int64), pl.col("Np").cast(pl.Int64))
            .join(labels, on=["K", "Np"], how="left", maintain_order="left")["segment"]
        )
    raise ValueError(f"segmentation {segmentation!r}: expected one of {SEGMENTATIONS}")


def segment_keys(finer_keys: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The columns that identify a segment: E, subset, finer keys..., segment."""
    unknown = set(finer_keys) - set(FINER_KEYS)
    if unknown:
        raise ValueError(f"finer keys {sorted(unknown)}: expected a subset of {FINER_KEYS}")
    return ["E", "subset", *finer_keys, "segment"]


def assign_segments(samples: pl.DataFrame, segmentation: str) -> pl.DataFrame:
    """``samples`` with ``subset``, ``level`` and ``segment`` columns added."""
    out = with_subset_and_level(samples)
    return out.with_columns(segment=segment_labels(out, segmentation))


MIN_SEGMENT_SAMPLES_KEY = "analysis.min_segment_samples"
"""The config key of the minimum of samples per segment, named in every reason it gives."""
DEFAULT_MIN_SEGMENT_SAMPLES = 300
"""The minimum on the narrow / wide and K/Np segments when the key is unset: the paper's."""
DEFAULT_MIN_ALL_SAMPLES = 10
"""The minimum on the segment ``all`` when the key is unset: the verdict's own minimum of queries
(``decide.verdict.MIN_QUERIES``), since its bootstrap intervals over queries carry the size."""


def segment_minimum(configured: int | None, segmentation: str) -> int:
    """The minimum of samples per segment of ``segmentation``: ``configured``
    (``analysis.min_segment_samples``) when set, else :data:`DEFAULT_MIN_ALL_SAMPLES` on the segment
    ``all`` (the verdict's; the only one of traces, which have no Np) and
    :data:`DEFAULT_MIN_SEGMENT_SAMPLES` on the others (narrow / wide, K/Np), whose per-segment
    correlations the paper's figures draw without the verdict's intervals."""
    if configured is not None:
        return configured
    return DEFAULT_MIN_ALL_SAMPLES if segmentation == "all" else DEFAULT_MIN_SEGMENT_SAMPLES


def too_few(minimum: int) -> str:
    """The word of a segment left out for its size: ``n < <minimum>``."""
    return f"n < {minimum}"


NO_SAMPLE_WITH_MEASURE = "not computed"
"""The first words of the reason of a segment where no sample has the measure (:func:`kept_and_reason`),
the verdict's few words for its reason code ``not_computed``; the figures say it of a measure
without any value (``figures.labels.MEASURE_NOT_COMPUTED``)."""


def too_few_reason(minimum: int) -> str:
    """The reason of a segment left out for its size, naming the config key and its value:
    "n < <min>: fewer than <min> samples with the measure and the target (analysis.min_segment_samples = <min>)"."""
    return (f"{too_few(minimum)}: fewer than {minimum} samples with the measure and the target "
            f"({MIN_SEGMENT_SAMPLES_KEY} = {minimum})")


def no_sample_with_measure(n: pl.Expr, n_missing_target: pl.Expr) -> pl.Expr:
    """Whether no sample of a segment has the measure: ``n`` (samples with the measure and the
    target) and ``n_missing_target`` (with the measure, not the target) both 0."""
    return (n == 0) & (n_missing_target == 0)


def kept_and_reason(n: pl.Expr, min_segment_samples: int, n_missing_target: pl.Expr | None = None) -> list[pl.Expr]:
    """The one rule of segment size: ``kept`` = ``n`` >= ``min_segment_samples``, and ``reason``,
    null where kept; else, where ``n`` = 0 and ``n_missing_target`` (samples with the measure but
    not the target) is 0 too, "not computed: no sample of the segment has the measure" (a judgment
    measure on a subset without judgments), otherwise :func:`too_few_reason`."""
    kept = n >= min_segment_samples
    small = pl.lit(too_few_reason(min_segment_samples))
    absent = pl.lit(f"{NO_SAMPLE_WITH_MEASURE}: no sample of the segment has the measure (for a judgment measure: no "
                    "judgments of this subset's texts)")
    reason = (small if n_missing_target is None
              else pl.when(no_sample_with_measure(n, n_missing_target)).then(absent).otherwise(small))
    return [kept.alias("kept"), pl.when(kept).then(pl.lit(None, pl.String)).otherwise(reason).alias("reason")]
