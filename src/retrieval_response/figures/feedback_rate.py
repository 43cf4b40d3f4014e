"""The users' feedback against each measure's value (``feedback_rate.png``): what a team that
monitors a measure would see move with it.

For every measure the verdict correlated with the target ``feedback`` on all samples (a measure
with alpha at the alpha where its correlation peaks, the verdict's ``alpha``), each system's
traces are binned by the measure's value: one bin per value when it takes at most
:data:`MAX_VALUES` values (P, T and T_u at one K), else :data:`BINS` bins at its quantiles. A bin
shows the mean feedback (for 0/1 feedback, the rate of 1s) at the mean value of its traces, with
a 95 % interval: Wilson's score interval for 0/1 feedback (:func:`wilson_interval`), else the
percentile bootstrap of the mean over the bin's traces (one per query of the system). A panel per
measure (and subset), a colour per system.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from retrieval_response.analysis.segments import with_subset_and_level
from retrieval_response.figures.inputs import ordered_measures
from retrieval_response.figures.labels import UNDEFINED
from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import DPI, FONT, FONT_TITLE, MAX_WIDTH_INCHES, NOTE_COLOUR, wrap
from retrieval_response.figures.run_end import FEEDBACK_RATE
from retrieval_response.measures.features import add_features
from retrieval_response.measures.registry import MEASURES

TARGET = "feedback"
MAX_VALUES = 6
"""A measure with at most this many distinct values gets one bin per value."""
BINS = 5
"""Quantile bins of a measure with more values."""
Z = 1.959963984540054
"""The standard normal quantile of 0.975 (a 95 % interval)."""
RESAMPLES = 1000
PANEL_INCHES = (3.0, 2.3)
COLUMNS = 4


def wilson_interval(successes: np.ndarray, n: np.ndarray, z: float = Z) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval of a binomial proportion, elementwise: centre (p + z^2/2n) / (1 +
    z^2/n) plus or minus z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n), p = successes / n (its bounds
    are exactly 0 without a success and 1 with all)."""
    successes, n = np.asarray(successes, np.float64), np.asarray(n, np.float64)
    p = successes / n
    denominator = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denominator
    # exactly 0 (no success) and 1 (all), where the formula gives them up to rounding
    return np.where(successes == 0, 0.0, centre - half), np.where(successes == n, 1.0, centre + half)


def measure_values(graded: pl.DataFrame, verdict: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """(E, subset, measure, value, feedback of every sample with both, measures left out with the
    reason): the measures of the verdict's rows of target feedback on segment ``all`` that have a
    correlation, each evaluated at its family's ``alpha`` when it has one."""
    rows = verdict.filter(pl.col("target") == TARGET, pl.col("segment") == "all",
                          pl.col("value").is_not_null() & pl.col("value").is_not_nan())
    samples = with_subset_and_level(add_features(graded.filter(pl.col(TARGET).is_not_null())))
    parts, left_out = [], {}
    for E, subset, name, alpha in rows.select("E", "subset", "measure", "alpha").iter_rows():
        measure = MEASURES[name]
        if measure.has_alpha and alpha is None:
            left_out[name] = f"{UNDEFINED}: the verdict gives no alpha for it"
            continue
        family = samples.filter(pl.col("E") == E, pl.col("subset") == subset)
        parts.append(pl.DataFrame({"E": E, "subset": subset, "measure": name, "value": measure.values_at(family, alpha),
                                   "feedback": family[TARGET].cast(pl.Float64)}))
    schema = {"E": pl.String, "subset": pl.String, "measure": pl.String, "value": pl.Float64, "feedback": pl.Float64}
    frame = pl.concat([pl.DataFrame(schema=schema), *(p.cast(schema) for p in parts)])
    return frame.filter(pl.col("value").is_finite()), left_out


def binned(values: np.ndarray, feedback: np.ndarray, seed: int = 0) -> list[tuple[float, float, float, float, int]]:
    """(mean value, mean feedback, interval low, high, traces) per bin (module docstring), by value."""
    distinct = np.unique(values)
    if len(distinct) <= MAX_VALUES:
        index = np.searchsorted(distinct, values)
    else:
        edges = np.unique(np.quantile(values, np.linspace(0, 1, BINS + 1)))
        index = np.searchsorted(edges[1:-1], values, side="right")
    binary = bool(np.isin(feedback, (0.0, 1.0)).all())
    rng = np.random.default_rng(seed)
    out = []
    for b in np.unique(index):
        here = feedback[index == b]
        n = len(here)
        if binary:
            low, high = wilson_interval(here.sum(), n)
        else:
            means = here[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
            low, high = np.quantile(means, [0.025, 0.975])
        out.append((float(values[index == b].mean()), float(here.mean()), float(low), float(high), n))
    return out


def feedback_rate_figure(graded: pl.DataFrame, verdict: pl.DataFrame, manifest: Manifest) -> Figure | None:
    """:data:`~retrieval_response.figures.run_end.FEEDBACK_RATE` of the analysis table ``graded``
    and the verdict table (module docstring), recorded in ``manifest``; None (listed as left out)
    when no sample has feedback or no measure a correlation with it."""
    if TARGET not in graded.columns or graded[TARGET].is_null().all():
        manifest.leave_out(FEEDBACK_RATE, f"{UNDEFINED}: no sample has feedback; figure not drawn")
        return None
    frame, left_out = measure_values(graded, verdict)
    for name, reason in left_out.items():
        manifest.leave_out(FEEDBACK_RATE, reason, measure=name)
    if frame.is_empty():
        manifest.leave_out(FEEDBACK_RATE, f"{UNDEFINED}: no measure has a correlation with the feedback; "
                                          "figure not drawn")
        return None
    binary = bool(frame["feedback"].is_in([0.0, 1.0]).all())
    subsets = sorted(frame["subset"].unique().to_list())
    panels = [(subset, name) for subset in subsets
              for name in ordered_measures(frame.filter(pl.col("subset") == subset)["measure"].unique().to_list())]
    systems = sorted(frame["E"].unique().to_list())
    colours = {e: colormaps["tab10"](i % 10) for i, e in enumerate(systems)}
    n_cols = min(COLUMNS, len(panels))
    n_rows = -(-len(panels) // n_cols)
    width = min(MAX_WIDTH_INCHES, n_cols * PANEL_INCHES[0] + 0.6)
    figure = Figure(figsize=(width, n_rows * PANEL_INCHES[1] + 1.6), dpi=DPI, layout="constrained")
    grid = figure.subplots(n_rows, n_cols, squeeze=False, sharey=True)
    ylabel = "feedback rate (share of 1)" if binary else "mean feedback"
    for axes, (subset, name) in zip(grid.flat, panels, strict=False):
        here = frame.filter(pl.col("subset") == subset, pl.col("measure") == name)
        for offset, E in enumerate(systems):
            rows = here.filter(pl.col("E") == E)
            if rows.is_empty():
                continue
            bins = np.array(binned(rows["value"].to_numpy(), rows["feedback"].to_numpy()))
            spread = 0.01 * (offset - (len(systems) - 1) / 2)  # systems side by side at a shared value
            x = bins[:, 0] + spread * max(1e-9, float(np.ptp(here["value"].to_numpy())))
            axes.errorbar(x, bins[:, 1], yerr=[bins[:, 1] - bins[:, 2], bins[:, 3] - bins[:, 1]], marker="o",
                          markersize=4, linewidth=1.2, capsize=2, color=colours[E])
        axes.set_title(name if len(subsets) == 1 else f"{name}, {subset}", fontsize=FONT_TITLE)
        axes.tick_params(labelsize=FONT)
        axes.set_xlabel("value", fontsize=FONT)
    for axes in grid[:, 0]:
        axes.set_ylabel(ylabel, fontsize=FONT)
    for axes in list(grid.flat)[len(panels):]:
        axes.set_visible(False)
    interval = "Wilson's 95 % interval" if binary else "95 % bootstrap interval of the mean"
    figure.suptitle(wrap(f"Feedback against each measure's value: each system's traces binned by the measure (one "
                         f"bin per value, or {BINS} quantile bins), the {ylabel} of a bin at its mean value, with "
                         f"{interval}; measures with alpha at the verdict's alpha", width), fontsize=FONT_TITLE)
    handles = [Line2D([], [], color=colours[e], marker="o", label=e) for e in systems]
    legend = figure.legend(handles=handles, loc="outside lower center", ncols=min(len(systems), 6), fontsize=FONT,
                           frameon=False, title="system", title_fontsize=FONT)
    legend.get_title().set_color(NOTE_COLOUR)
    manifest.drawn.append({"file": FEEDBACK_RATE, "figure": "feedback against each measure's value, binned",
                           "target": TARGET, "panels": [f"{subset} / {name}" for subset, name in panels]})
    return figure
