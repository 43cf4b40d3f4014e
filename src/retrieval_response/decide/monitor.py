"""Monitor what was chosen (docs/TRACES.md#monitor-what-was-chosen): the verdict's recommended
measure and its target, per system and period of the traces' ``time``, with a control band.

For each row of the verdict with ``recommended`` on segment ``all`` (a family: target, subset,
system ``E``), the samples of that subset and system with a ``time`` are put in periods
(:func:`period_start`: the UTC day, or the ISO week from Monday, ``monitor.period``). Per period,
two series: ``measure``, the mean of the recommended measure over the period's samples where it is
defined (a measure with alpha at the verdict's ``alpha``), and ``target``, the mean of the target
where it has a value; each with ``n_queries`` (a system's trace is one query) and a 95 % percentile
bootstrap interval over the period's queries (:func:`period_means`). Each series is then checked
against its own past (:func:`control_flags`).

The band (Shewhart's individuals chart): a period's ``band_low, band_high`` = m -+ 3 s, m and s
the mean and standard deviation (ddof 1) of the series' values of every previous period; ``flag``
is True when the value falls outside it (``flag_reason`` says above or below). With fewer than
:data:`MIN_PREVIOUS` previous periods there is no band: ``flag`` False and the reason says so.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from retrieval_response.analysis.bootstrap import percentile_interval, resample_weights
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES

PERIODS = {"day": "1d", "week": "1w"}
"""``monitor.period``: its polars truncation (a week starts on Monday, as ISO 8601's)."""
MIN_PREVIOUS = 3
"""Fewest previous periods that make a control band."""
SIGMAS = 3.0
"""The band's half-width in standard deviations of the previous periods' values."""
LEVEL = 0.95
"""The level of a period's bootstrap interval."""
MONITOR_STREAM = 7171950
"""The random stream of the monitor's bootstrap (``mon`` in ASCII): a period's draw is seeded with
(``analysis.seed``, this, the ordinal of the period's first day, ``date.toordinal``), docs/METHODS.md."""
SCHEMA = {
    "E": pl.String, "subset": pl.String, "target": pl.String, "measure": pl.String, "alpha": pl.Float64,
    "period": pl.Date, "series": pl.String, "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "n_queries": pl.Int64, "band_low": pl.Float64, "band_high": pl.Float64, "flag": pl.Boolean,
    "flag_reason": pl.String,
}
"""monitor.parquet: a row per family (E, subset, target), period and series (``measure`` or
``target``)."""


def period_start(time: pl.Expr, period: str) -> pl.Expr:
    """The first day (a date) of the period of each UTC datetime of ``time``: the day itself for
    ``day``, the Monday of its ISO week for ``week``."""
    if period not in PERIODS:
        raise ValueError(f"period {period!r}: expected one of {list(PERIODS)}")
    return time.dt.truncate(PERIODS[period]).dt.date()


def period_means(values: np.ndarray, resamples: int, seed: tuple[int, ...]) -> tuple[float, float, float]:
    """(mean, interval low, high) of one period's per-query ``values``: the mean, and the 95 %
    percentile interval of the weighted means sum_i w_ri v_i / n over ``resamples`` multinomial
    resamples of the queries (``analysis.bootstrap.resample_weights``, one stratum, seeded with
    ``seed``)."""
    values = np.asarray(values, np.float64)
    weights = resample_weights(np.zeros(len(values)), resamples, seed)
    low, high = percentile_interval((weights @ values / len(values))[None, :], LEVEL)
    return float(values.mean()), float(low[0]), float(high[0])


def control_flags(values: np.ndarray) -> list[tuple[float | None, float | None, bool, str | None]]:
    """(band_low, band_high, flag, flag_reason) per period of the series ``values`` (in period
    order; module docstring): the band of the values before it, mean -+ :data:`SIGMAS` standard
    deviations (ddof 1), from :data:`MIN_PREVIOUS` previous periods on; ``flag`` when the value
    is outside it."""
    values = np.asarray(values, np.float64)
    out = []
    for index, value in enumerate(values):
        if index < MIN_PREVIOUS:
            out.append((None, None, False, f"no band: {index} previous period{'s' * (index != 1)}, "
                                            f"the band needs {MIN_PREVIOUS}"))
            continue
        previous = values[:index]
        centre, spread = float(previous.mean()), float(previous.std(ddof=1))
        low, high = centre - SIGMAS * spread, centre + SIGMAS * spread
        side = "above" if value > high else "below" if value < low else None
        reason = None if side is None else (f"{side} the band of the {index} previous periods "
                                            f"(mean {centre:.4g} -+ {SIGMAS:g} sd {spread:.4g})")
        out.append((low, high, side is not None, reason))
    return out


def monitor_table(graded: pl.DataFrame, verdict: pl.DataFrame, *, period: str = "week", resamples: int = 1000,
                  seed: int = 0) -> pl.DataFrame:
    """:data:`SCHEMA` rows of the analysis table ``graded`` (traces, with ``time``) and the
    verdict table (module docstring); periods in time order within each family and series. Empty
    when no sample has a time or the verdict recommends nothing."""
    chosen = verdict.filter(pl.col("segment") == "all", pl.col("recommended").fill_null(False))
    timed = graded.filter(pl.col("time").is_not_null()) if "time" in graded.columns else graded.clear()
    if timed.is_empty() or chosen.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    samples = add_features(timed).with_columns(period=period_start(pl.col("time"), period)).sort("period", "id")
    rows = []
    for target, subset, E, name, alpha in chosen.select("target", "subset", "E", "measure", "alpha").iter_rows():
        family = samples.filter(pl.col("subset") == subset, pl.col("E") == E)
        family = family.with_columns(_measure=pl.Series(MEASURES[name].values_at(family, alpha)),
                                     _target=pl.col(target).cast(pl.Float64).fill_nan(None))
        key = {"E": E, "subset": subset, "target": target, "measure": name, "alpha": alpha}
        for series, column in (("measure", "_measure"), ("target", "_target")):
            defined = family.filter(pl.col(column).is_not_null() & pl.col(column).is_finite())
            points = []
            for (start,), group in defined.group_by("period", maintain_order=True):
                stream = (seed, MONITOR_STREAM, start.toordinal())
                value, low, high = period_means(group[column].to_numpy(), resamples, stream)
                points.append({**key, "period": start, "series": series, "value": value, "ci_low": low,
                               "ci_high": high, "n_queries": group.height})
            flags = control_flags(np.array([p["value"] for p in points]))
            rows += [{**p, "band_low": b_low, "band_high": b_high, "flag": flag, "flag_reason": reason}
                     for p, (b_low, b_high, flag, reason) in zip(points, flags, strict=True)]
    return pl.DataFrame(rows, schema=SCHEMA)
