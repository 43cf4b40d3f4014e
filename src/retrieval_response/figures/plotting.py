"""Drawing primitives of the figures: stacked heatmap panels and forest-plot grids.

Everything is drawn on matplotlib's Agg canvas (no pyplot state) at :data:`DPI`, with
tick labels, axis labels and panel titles at >= 9 pt, figures at most
:data:`MAX_WIDTH_INCHES` wide and a constrained layout (no overlapping labels). PNGs are written
atomically. What to draw (which rows, which panels) is decided by the module of each figure kind.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass

import numpy as np
import polars as pl
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap, Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from retrieval_response.infra.atomic import atomic_path

DPI = 100
MAX_WIDTH_INCHES = 14.0
FONT = 9  # tick labels, axis labels, legend, cell values
FONT_TITLE = 10  # figure and panel titles
FONT_NOTE = 8  # sample sizes under cell values, notes inside panels left empty
NOTE_COLOUR = "#555555"
BLANK_CELL = "#bdbdbd"  # heatmap cells left out (grey: apart from the light middle of a diverging map)
NOT_DRAWN_CELL = "#ffffff"  # heatmap cells of a combination without samples (not run, not computed)
CHAR_INCHES = 0.075  # width of one FONT pt character, to reserve room for labels

CELL_INCHES = (0.62, 0.46)  # width, height of one heatmap cell with a note under its value
COMPACT_CELL_HEIGHT_INCHES = 0.3  # height of a cell in a panel without notes
MIN_CELL_WIDTH_INCHES = 0.45  # narrowest cell that still holds "-0.12*" and "n=1234"
HEATMAP_PAD_INCHES = 0.75  # panel title and column labels of one panel
COLORBAR_INCHES = 1.1
TITLE_LINE_INCHES = 0.22

FOREST_PANEL_WIDTH_INCHES = 1.95
FOREST_ROW_INCHES = 0.24  # one measure
FOREST_PAD_INCHES = 0.8  # panel title (two lines) and x tick labels
FOREST_LEGEND_INCHES = 0.5


def wrap(text: str, width_inches: float, size: float = FONT_TITLE) -> str:
    """``text`` wrapped to lines that fit ``width_inches`` at ``size`` pt (about 0.6 em per character)."""
    chars = max(20, int(width_inches * 72 / (0.6 * size)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def save_png(figure: Figure, path: str | os.PathLike) -> None:
    """Render ``figure`` with the Agg canvas and write it to ``path`` as PNG, atomically."""
    FigureCanvasAgg(figure)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI)


def _label_inches(labels) -> float:
    return max((len(label) for label in labels), default=0) * CHAR_INCHES + 0.3


def _text_colour(rgba) -> str:
    luminance = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2]
    return "black" if luminance > 0.5 else "white"


# --------------------------------------------------------------------------- heatmaps


@dataclass(frozen=True)
class HeatmapPanel:
    """One heatmap panel.

    ``values[r, c]`` sets the colour (NaN: blank cell); ``text[r, c]`` is written in the cell
    centre (in small grey type where the value is NaN: the word for an empty cell) and
    ``notes[r, c]`` in small type below it (e.g. the sample size); a horizontal line follows every
    ``group_rows`` rows (0: none). NaN cells are grey (left out), or white where ``not_drawn``
    is True (a combination without samples).
    """

    title: str
    values: np.ndarray
    text: np.ndarray
    notes: np.ndarray
    row_labels: list[str]
    col_labels: list[str]
    group_rows: int = 0
    not_drawn: np.ndarray | None = None


def heatmap_cell_width(n_cols: int, label_inches: float) -> float:
    """Cell width: CELL_INCHES[0], narrowed so that label + cells + colour bar fit MAX_WIDTH_INCHES."""
    room = MAX_WIDTH_INCHES - label_inches - COLORBAR_INCHES
    return max(MIN_CELL_WIDTH_INCHES, min(CELL_INCHES[0], room / max(n_cols, 1)))


def heatmap_figure(panels: list[HeatmapPanel], *, title: str, xlabel: str, cmap: str, norm: Normalize,
                   colorbar_label: str, footer: str = "", extend: str = "neither") -> Figure:
    """Panels stacked vertically with one shared colour scale; cells keep the same size in every panel.

    ``norm`` fixes the colour limits (values beyond them take the end colours; ``extend`` marks
    that on the colour bar: "neither", "both", "min", "max"); ``footer`` is set in small type
    under the panels (codes and empty-cell words).

    Width = row labels + max columns x cell width + colour bar (<= MAX_WIDTH_INCHES);
    height = sum over panels of (rows x cell height + HEATMAP_PAD_INCHES) + title lines, where
    the cell height is CELL_INCHES[1] in panels with notes, COMPACT_CELL_HEIGHT_INCHES otherwise.
    """
    n_cols = max(p.values.shape[1] for p in panels)
    label_inches = _label_inches(label for p in panels for label in p.row_labels)
    cell_width = heatmap_cell_width(n_cols, label_inches)
    width = min(MAX_WIDTH_INCHES, max(6.0, label_inches + n_cols * cell_width + COLORBAR_INCHES))
    title = wrap(title, width)
    heights = [p.values.shape[0] * _cell_height(p) + HEATMAP_PAD_INCHES for p in panels]
    footer = wrap(footer, width, FONT) if footer else ""
    height = (sum(heights) + (title.count("\n") + 1) * TITLE_LINE_INCHES + 0.5 + 0.3
              + footer_inches(footer))
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    grid = figure.add_gridspec(len(panels), 1, height_ratios=heights)
    colour_map = colormaps[cmap].with_extremes(bad=BLANK_CELL)
    all_axes = []
    for index, panel in enumerate(panels):
        axes = figure.add_subplot(grid[index])
        _draw_heatmap(axes, panel, colour_map, norm, cell_width)
        axes.set_xlim(-0.5, n_cols - 0.5)  # a panel with fewer columns leaves the right side empty
        axes.set_xlabel(xlabel if index == len(panels) - 1 else "", fontsize=FONT)
        all_axes.append(axes)
    mappable = all_axes[0].images[0]
    bar = figure.colorbar(mappable, ax=all_axes, shrink=min(1.0, 4.0 / max(height, 1.0)) ** 0.3, aspect=30,
                          extend=extend)
    bar.set_label(colorbar_label, fontsize=FONT)
    bar.ax.tick_params(labelsize=FONT)
    figure.suptitle(title, fontsize=FONT_TITLE)
    _set_footer(figure, footer)
    return figure


def footer_inches(footer: str) -> float:
    """The height of ``footer`` (wrapped, FONT pt) under a figure's panels; 0 without one."""
    return (footer.count("\n") + 1) * TITLE_LINE_INCHES + 0.1 if footer else 0.0


def _set_footer(figure: Figure, footer: str) -> None:
    if footer:
        figure.supxlabel(footer, fontsize=FONT, color=NOTE_COLOUR, ha="left", x=0.01, multialignment="left")


def _cell_height(panel: HeatmapPanel) -> float:
    return CELL_INCHES[1] if panel.notes.any() else COMPACT_CELL_HEIGHT_INCHES


def _draw_heatmap(axes, panel: HeatmapPanel, colour_map, norm: Normalize, cell_width: float) -> None:
    values = panel.values
    image = axes.imshow(np.ma.masked_invalid(values), cmap=colour_map, norm=norm, aspect="auto",
                        interpolation="nearest")
    longest = max((len(line) for label in panel.col_labels for line in label.split("\n")), default=0)
    rotation = 90 if longest * CHAR_INCHES > cell_width else 0
    axes.set_xticks(range(len(panel.col_labels)), panel.col_labels, fontsize=FONT, rotation=rotation)
    axes.set_yticks(range(len(panel.row_labels)), panel.row_labels, fontsize=FONT)
    axes.tick_params(length=0)
    axes.spines[:].set_visible(False)
    axes.set_title(panel.title, fontsize=FONT_TITLE, loc="left", fontweight="bold")
    not_drawn = panel.not_drawn if panel.not_drawn is not None else np.zeros(values.shape, dtype=bool)
    if not_drawn.any():
        axes.imshow(np.ma.masked_where(~(not_drawn & np.isnan(values)), np.ones(values.shape)),
                    cmap=ListedColormap([NOT_DRAWN_CELL]), aspect="auto", interpolation="nearest")
    colours = np.where(np.isnan(values)[..., None], to_rgba(BLANK_CELL), image.cmap(norm(np.nan_to_num(values))))
    offset = 0.17 if panel.notes.any() else 0.0
    for (r, c), text in np.ndenumerate(panel.text):
        colour = _text_colour(colours[r, c])
        if text and np.isnan(values[r, c]):
            axes.text(c, r - offset, text, ha="center", va="center", fontsize=FONT_NOTE, color="#333333")
        elif text:
            axes.text(c, r - offset, text, ha="center", va="center", fontsize=FONT, color=colour)
        if panel.notes[r, c]:
            note_colour = NOTE_COLOUR if np.isnan(values[r, c]) else colour
            axes.text(c, r + 0.22, panel.notes[r, c], ha="center", va="center", fontsize=FONT_NOTE,
                      color=note_colour)
    if panel.group_rows:
        boundaries = np.arange(panel.group_rows, len(panel.row_labels), panel.group_rows) - 0.5
        axes.hlines(boundaries, -0.5, values.shape[1] - 0.5, color="black", linewidth=1.2)


# --------------------------------------------------------------------------- forest plots


@dataclass(frozen=True)
class ForestPanel:
    """One forest-plot panel: ``points`` has columns measure, E, value, ci_low, ci_high,
    value_crossfit (one row per measure x embedder); with no points, ``note`` says why."""

    title: str
    points: pl.DataFrame | None
    note: str = ""


@dataclass(frozen=True)
class ForestRow:
    """A row of panels that share the measure axis, labelled ``label`` on the left."""

    label: str
    panels: list[ForestPanel]


def forest_columns(n_panels: int, label_inches: float) -> int:
    """Panels per row: as many FOREST_PANEL_WIDTH_INCHES panels as fit MAX_WIDTH_INCHES beside the labels."""
    fit = int((MAX_WIDTH_INCHES - label_inches - 0.3) // FOREST_PANEL_WIDTH_INCHES)
    return max(1, min(n_panels, fit))


def forest_limits(rows: list[ForestRow]) -> tuple[float, float]:
    """Common x range of all panels: :func:`value_limits` of their points, intervals and cross-fitted values."""
    frames = [p.points for row in rows for p in row.panels if p.points is not None]
    values = np.concatenate([f.select("value", "ci_low", "ci_high", "value_crossfit").to_numpy().ravel()
                             for f in frames]) if frames else np.array([])
    return value_limits(values)


def value_limits(values: np.ndarray) -> tuple[float, float]:
    """An x range of correlations: the finite ``values`` and 0, padded by 8 %, inside [-1.05, 1.05]
    ([-1.05, 1.05] without finite values)."""
    values = np.asarray(values, dtype=np.float64)
    finite = values[np.isfinite(values)]
    low = min(0.0, float(finite.min())) if finite.size else -1.0
    high = max(0.0, float(finite.max())) if finite.size else 1.0
    pad = max(0.05, 0.08 * (high - low))
    return max(-1.05, low - pad), min(1.05, high + pad)


def forest_figure(rows: list[ForestRow], *, measures: list[str], embedders: list[str], title: str,
                  xlabel: str, crossfit: bool, footer: str = "") -> Figure:
    """A grid of forest plots: one y position per measure (in ``measures`` order, top to bottom),
    one colour per embedder; a filled dot is the correlation, its line the bootstrap interval, an
    open diamond (when ``crossfit``) the cross-fitted value. Rows wider than the page wrap; x is
    shared by all panels, with a dashed line at 0; ``footer`` is set at the bottom, above the legend.
    """
    label_inches = _label_inches(measures) + 0.35
    n_cols = forest_columns(max(len(r.panels) for r in rows), label_inches)
    wrapped = [(row.label, row.panels[i:i + n_cols]) for row in rows for i in range(0, len(row.panels), n_cols)]
    width = min(MAX_WIDTH_INCHES, max(6.0, label_inches + n_cols * FOREST_PANEL_WIDTH_INCHES + 0.3))
    title = wrap(title, width)
    panel_height = len(measures) * FOREST_ROW_INCHES + FOREST_PAD_INCHES
    footer = wrap(footer, width, FONT) if footer else ""
    height = (len(wrapped) * panel_height + (title.count("\n") + 1) * TITLE_LINE_INCHES
              + FOREST_LEGEND_INCHES + 0.5 + footer_inches(footer))
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    grid = figure.subplots(len(wrapped), n_cols, squeeze=False, sharex=True, sharey=True)
    grid[0, 0].set_xlim(*forest_limits(rows))  # the axes share x and y: set limits and ticks once
    grid[0, 0].set_ylim(len(measures) - 0.5, -0.5)
    grid[0, 0].set_yticks(range(len(measures)), measures, fontsize=FONT)
    grid[0, 0].xaxis.set_major_locator(MaxNLocator(nbins=4))
    colours = {e: colormaps["tab10"](i % 10) for i, e in enumerate(embedders)}
    for r, (label, panels) in enumerate(wrapped):
        for c in range(n_cols):
            axes = grid[r, c]
            if c >= len(panels):
                axes.set_visible(False)
                continue
            _draw_forest_panel(axes, panels[c], measures, embedders, colours, crossfit)
            axes.tick_params(axis="x", labelbottom=True, labelsize=FONT)
            axes.tick_params(axis="y", length=0, labelsize=FONT)
        grid[r, 0].set_ylabel(label, fontsize=FONT_TITLE, fontweight="bold")
    for axes in grid[-1]:
        axes.set_xlabel(xlabel, fontsize=FONT)
    legend = figure.legend(handles=_forest_legend(embedders, colours, crossfit), loc="outside lower center",
                           ncols=min(len(embedders) + 2, max(2, int(width // 1.8))), fontsize=FONT, frameon=False,
                           title=footer or None, title_fontsize=FONT)
    legend.get_title().set_color(NOTE_COLOUR)  # the footer sits above the legend's entries
    figure.suptitle(title, fontsize=FONT_TITLE)
    return figure


def _draw_forest_panel(axes, panel: ForestPanel, measures, embedders, colours, crossfit) -> None:
    axes.set_title(panel.title, fontsize=FONT)
    axes.axvline(0.0, color="#888888", linewidth=0.8, linestyle="--", zorder=0)
    axes.hlines(np.arange(1, len(measures)) - 0.5, 0, 1, transform=axes.get_yaxis_transform(), color="#eeeeee",
                linewidth=0.6, zorder=0)
    if panel.points is None or panel.points.is_empty():
        axes.text(0.5, 0.5, panel.note, transform=axes.transAxes, ha="center", va="center",
                  fontsize=FONT_NOTE, color=NOTE_COLOUR, wrap=True)
        return
    step = 0.7 / max(len(embedders), 1)
    points = panel.points.with_columns(
        y=pl.col("measure").replace_strict(measures, list(range(len(measures))), return_dtype=pl.Float64)
        + (pl.col("E").replace_strict(embedders, list(range(len(embedders))), return_dtype=pl.Float64)
           - (len(embedders) - 1) / 2) * step
    )
    for embedder, part in points.partition_by("E", as_dict=True).items():
        colour = colours[embedder[0]]
        y = part["y"].to_numpy()
        axes.hlines(y, part["ci_low"].fill_null(np.nan).to_numpy(), part["ci_high"].fill_null(np.nan).to_numpy(),
                    color=colour, linewidth=1.4)
        axes.plot(part["value"].to_numpy(), y, "o", color=colour, markersize=4.5)
        if crossfit:
            axes.plot(part["value_crossfit"].fill_null(np.nan).to_numpy(), y, "D", markerfacecolor="none",
                      markeredgecolor=colour, markersize=4.5, markeredgewidth=1.0)


def _forest_legend(embedders, colours, crossfit) -> list[Line2D]:
    handles = [Line2D([], [], color=colours[e], marker="o", markersize=5, linewidth=1.4, label=e)
               for e in embedders]
    if crossfit:
        handles.append(Line2D([], [], color="black", marker="D", markerfacecolor="none", linestyle="none",
                              markersize=5, label="alpha cross-fitted"))
    return handles
