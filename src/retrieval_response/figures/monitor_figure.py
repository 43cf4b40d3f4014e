"""The monitor's figures (``monitor_<system>.png``, one per system: its name is a safe name,
checked when the traces were read): the recommended measure and its target per period, with
their intervals and control bands, flagged periods marked (:mod:`retrieval_response.decide.monitor`).

A row of panels per family (target, subset): left the measure, right the target; a period's
mean with its 95 % bootstrap interval, the control band (from the fourth period on) shaded, a
flagged period ringed in red.
"""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from retrieval_response.figures.manifest import Manifest
from retrieval_response.figures.plotting import DPI, FONT, FONT_TITLE, MAX_WIDTH_INCHES, wrap

PANEL_INCHES = (4.6, 2.4)
FLAG_COLOUR = "#d62728"


def monitor_file(system: str) -> str:
    """The file name of ``system``'s monitor figure."""
    return f"monitor_{system}.png"


def _panel(axes, rows: pl.DataFrame, title: str) -> None:
    periods = rows["period"].to_list()
    values = rows["value"].to_numpy()
    axes.errorbar(periods, values, yerr=[values - rows["ci_low"].to_numpy(), rows["ci_high"].to_numpy() - values],
                  marker="o", markersize=4, linewidth=1.2, capsize=2, color="#1f77b4")
    banded = rows.filter(pl.col("band_low").is_not_null())
    if not banded.is_empty():
        axes.fill_between(banded["period"].to_list(), banded["band_low"].to_numpy(), banded["band_high"].to_numpy(),
                          color="#1f77b4", alpha=0.12, linewidth=0, step="mid")
    flagged = rows.filter(pl.col("flag"))
    if not flagged.is_empty():
        axes.scatter(flagged["period"].to_list(), flagged["value"].to_numpy(), s=110, facecolors="none",
                     edgecolors=FLAG_COLOUR, linewidths=1.6, zorder=3, label="flagged")
    axes.set_title(title, fontsize=FONT_TITLE)
    axes.tick_params(labelsize=FONT)
    axes.tick_params(axis="x", labelrotation=30)


def monitor_figures(monitor: pl.DataFrame, manifest: Manifest) -> dict[str, Figure]:
    """One figure per system of the monitor table (``decide.monitor.SCHEMA``), by file name,
    each recorded in ``manifest``; none for an empty table."""
    figures = {}
    for system in sorted(monitor["E"].unique().to_list()):
        rows = monitor.filter(pl.col("E") == system)
        families = rows.select("target", "subset", "measure", "alpha").unique(maintain_order=True).sort("target", "subset")
        width = min(MAX_WIDTH_INCHES, 2 * PANEL_INCHES[0] + 0.4)
        figure = Figure(figsize=(width, families.height * PANEL_INCHES[1] + 1.2), dpi=DPI, layout="constrained")
        grid = figure.subplots(families.height, 2, squeeze=False)
        panels = []
        for axes_row, (target, subset, measure, alpha) in zip(grid, families.iter_rows(), strict=True):
            family = rows.filter(pl.col("target") == target, pl.col("subset") == subset).sort("period")
            at = "" if alpha is None else f" (alpha {alpha:.3g})"
            _panel(axes_row[0], family.filter(pl.col("series") == "measure"), f"{measure}{at}, {subset}")
            _panel(axes_row[1], family.filter(pl.col("series") == "target"), f"{target}, {subset}")
            axes_row[0].set_ylabel(f"mean {measure}", fontsize=FONT)
            axes_row[1].set_ylabel(f"mean {target}", fontsize=FONT)
            panels += [f"{subset} / {target} / {measure}", f"{subset} / {target}"]
        figure.suptitle(wrap(f"System {system}: the verdict's recommended measure for each target and the target, "
                             "mean per period with its 95 % bootstrap interval over the period's queries; shaded: "
                             "the control band (mean -+ 3 sd of the previous periods), red ring: a flagged period",
                             width), fontsize=FONT_TITLE)
        name = monitor_file(system)
        figures[name] = figure
        manifest.drawn.append({"file": name, "figure": "the recommended measure and its target per period",
                               "system": system, "flagged": int(rows["flag"].sum()), "panels": panels})
    return figures
