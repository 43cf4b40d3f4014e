"""Drawing primitives of the figures: stacked heatmap panels and forest-plot grids.

Everything is drawn on matplotlib's Agg canvas (no pyplot state) at :data:`DPI`, with
tick labels, axis labels and panel titles at >= 9 pt, figures at most
:data:`MAX_WIDTH_INCHES` wide and a fixed layout (:mod:`frame`: no overlapping labels). PNGs are written
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

from retrieval_response.figures.frame import (
    EDGE_INCHES,
    GAP_INCHES,
    LABEL_PAD_POINTS,
    POINT_INCHES,
    TICK_PAD_POINTS,
    TICK_POINTS,
    TITLE_PAD_POINTS,
    artist_inches,
    pin_labels,
    place,
    text_inches,
    widest,
)
from retrieval_response.infra.atomic import atomic_path

DPI = 100
MAX_WIDTH_INCHES = 14.0
FONT = 9  # tick labels, axis labels, legend, cell values
FONT_TITLE = 10  # figure and panel titles
FONT_NOTE = 8  # sample sizes under cell values, notes inside panels left empty
NOTE_COLOUR = "#555555"
BLANK_CELL = "#bdbdbd"  # heatmap cells left out (grey: apart from the light middle of a diverging map)
NOT_DRAWN_CELL = "#ffffff"  # heatmap cells of a combination without samples (not run, not computed)

CELL_INCHES = (0.62, 0.46)  # width, height of one heatmap cell with a note under its value
COMPACT_CELL_HEIGHT_INCHES = 0.3  # height of a cell in a panel without notes
MIN_CELL_WIDTH_INCHES = 0.45  # narrowest cell that still holds "-0.12*" and "n=1234"
COLORBAR_GAP_INCHES = 0.25  # cells to colour bar
COLORBAR_WIDTH_INCHES = 0.22

FOREST_PANEL_WIDTH_INCHES = 1.95
FOREST_ROW_INCHES = 0.24  # one measure
FOREST_GAP_INCHES = 0.3  # between two panels of a row (room for their outer x tick labels)


def wrap(text: str, width_inches: float, size: float = FONT_TITLE) -> str:
    """``text`` wrapped to lines that fit ``width_inches`` at ``size`` pt (about 0.6 em per character)."""
    chars = max(20, int(width_inches * 72 / (0.6 * size)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def save_png(figure: Figure, path: str | os.PathLike) -> None:
    """Render ``figure`` with the Agg canvas and write it to ``path`` as PNG, atomically."""
    FigureCanvasAgg(figure)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI)


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


def heatmap_cell_width(n_cols: int, room_inches: float) -> float:
    """Cell width: CELL_INCHES[0], narrowed so that ``n_cols`` cells fit ``room_inches`` (not below
    MIN_CELL_WIDTH_INCHES)."""
    return max(MIN_CELL_WIDTH_INCHES, min(CELL_INCHES[0], room_inches / max(n_cols, 1)))


def heatmap_figure(panels: list[HeatmapPanel], *, title: str, xlabel: str, cmap: str, norm: Normalize,
                   colorbar_label: str, footer: str = "", extend: str = "neither") -> Figure:
    """Panels stacked vertically with one shared colour scale; cells keep the same size in every panel.

    ``norm`` fixes the colour limits (values beyond them take the end colours; ``extend`` marks
    that on the colour bar: "neither", "both", "min", "max"); ``footer`` is set in small type
    under the panels (codes and empty-cell words).

    A fixed layout (:mod:`frame`): width = row labels + max columns x cell width + colour bar
    (<= MAX_WIDTH_INCHES, >= 6 in: cells widen to fill it); height = title + for each panel its
    title, rows x cell height (CELL_INCHES[1] in panels with notes, COMPACT_CELL_HEIGHT_INCHES
    otherwise) and column labels (turned upright when a line is wider than a cell) + footer.
    """
    n_cols = max(p.values.shape[1] for p in panels)
    left = EDGE_INCHES + widest((label for p in panels for label in p.row_labels), FONT) + TICK_PAD_POINTS * POINT_INCHES
    bar = _colorbar_inches(norm, colorbar_label)
    cell_width = heatmap_cell_width(n_cols, MAX_WIDTH_INCHES - left - bar)
    width = min(MAX_WIDTH_INCHES, max(6.0, left + n_cols * cell_width + bar))
    cell_width = (width - left - bar) / n_cols
    lines = [line for p in panels for label in p.col_labels for line in label.split("\n")]
    rotation = 90 if widest(lines, FONT) > cell_width - 2 * GAP_INCHES else 0
    ticks = TICK_PAD_POINTS * POINT_INCHES + max(text_inches(label, FONT, rotation=rotation)[1]
                                                 for p in panels for label in p.col_labels)
    label_below = ticks + LABEL_PAD_POINTS * POINT_INCHES
    title = wrap(title, width)
    footer = wrap(footer, width, FONT) if footer else ""
    top = EDGE_INCHES + text_inches(title, FONT_TITLE)[1] + 2 * GAP_INCHES
    boxes = []  # (top, height) of each panel's data area
    for panel in panels:
        top += text_inches(panel.title, FONT_TITLE, weight="bold")[1] + TITLE_PAD_POINTS * POINT_INCHES
        boxes.append((top, panel.values.shape[0] * _cell_height(panel)))
        top += boxes[-1][1] + ticks + 2 * GAP_INCHES
    top += text_inches(xlabel, FONT)[1] + LABEL_PAD_POINTS * POINT_INCHES
    height = top + text_inches(footer, FONT)[1] + EDGE_INCHES
    figure = Figure(figsize=(width, height), dpi=DPI)
    colour_map = colormaps[cmap].with_extremes(bad=BLANK_CELL)
    all_axes = []
    for index, (panel, (panel_top, panel_height)) in enumerate(zip(panels, boxes, strict=True)):
        axes = figure.add_axes((0, 0, 1, 1))
        place(axes, left, panel_top, n_cols * cell_width, panel_height)
        _draw_heatmap(axes, panel, colour_map, norm, rotation)
        axes.set_xlim(-0.5, n_cols - 0.5)  # a panel with fewer columns leaves the right side empty
        axes.set_xlabel(xlabel if index == len(panels) - 1 else "", fontsize=FONT)
        pin_labels(axes, n_cols * cell_width, panel_height, x_below=label_below)
        all_axes.append(axes)
    span_top, span_bottom = boxes[0][0], boxes[-1][0] + boxes[-1][1]
    bar_height = (span_bottom - span_top) * min(1.0, 4.0 / max(height, 1.0)) ** 0.3
    cax = figure.add_axes((0, 0, 1, 1))
    place(cax, left + n_cols * cell_width + COLORBAR_GAP_INCHES, (span_top + span_bottom - bar_height) / 2,
          COLORBAR_WIDTH_INCHES, bar_height)
    bar = figure.colorbar(all_axes[0].images[0], cax=cax, extend=extend)
    bar.set_label(colorbar_label, fontsize=FONT)
    bar.ax.tick_params(labelsize=FONT)
    _set_titles(figure, title, footer)
    return figure


def _colorbar_inches(norm: Normalize, label: str) -> float:
    """The room right of the cells for the colour bar: gap, bar, ticks, tick labels, label, border."""
    tick_labels = widest((f"{v:.2f}".replace("-", "\N{MINUS SIGN}") for v in (norm.vmin, norm.vmax)), FONT)
    return (COLORBAR_GAP_INCHES + COLORBAR_WIDTH_INCHES + (TICK_POINTS + TICK_PAD_POINTS + LABEL_PAD_POINTS)
            * POINT_INCHES + tick_labels + text_inches(label, FONT, rotation=90)[0] + EDGE_INCHES)


def _set_titles(figure: Figure, title: str, footer: str) -> None:
    """The figure's title at the top and its ``footer`` (if any) at the bottom, inside the border."""
    height = figure.get_size_inches()[1]
    figure.suptitle(title, fontsize=FONT_TITLE, y=1 - EDGE_INCHES / height, va="top")
    if footer:
        figure.supxlabel(footer, fontsize=FONT, color=NOTE_COLOUR, ha="left", x=EDGE_INCHES / figure.get_size_inches()[0],
                         y=EDGE_INCHES / height, va="bottom", multialignment="left")


def _cell_height(panel: HeatmapPanel) -> float:
    return CELL_INCHES[1] if panel.notes.any() else COMPACT_CELL_HEIGHT_INCHES


def _draw_heatmap(axes, panel: HeatmapPanel, colour_map, norm: Normalize, rotation: float) -> None:
    values = panel.values
    image = axes.imshow(np.ma.masked_invalid(values), cmap=colour_map, norm=norm, aspect="auto",
                        interpolation="nearest")
    axes.set_xticks(range(len(panel.col_labels)), panel.col_labels, fontsize=FONT, rotation=rotation)
    axes.set_yticks(range(len(panel.row_labels)), panel.row_labels, fontsize=FONT)
    axes.tick_params(length=0)
    axes.spines[:].set_visible(False)
    axes.set_title(panel.title, fontsize=FONT_TITLE, loc="left", fontweight="bold", y=1.0, pad=TITLE_PAD_POINTS)
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
    value_crossfit (one row per measure x ranker); with no points, ``note`` says why."""

    title: str
    points: pl.DataFrame | None
    note: str = ""


@dataclass(frozen=True)
class ForestRow:
    """A row of panels that share the measure axis, labelled ``label`` on the left."""

    label: str
    panels: list[ForestPanel]


def forest_columns(n_panels: int, room_inches: float) -> int:
    """Panels per row: as many FOREST_PANEL_WIDTH_INCHES panels as fit ``room_inches`` (at least one)."""
    return max(1, min(n_panels, int(room_inches // FOREST_PANEL_WIDTH_INCHES)))


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


def forest_figure(rows: list[ForestRow], *, measures: list[str], rankers: list[str], title: str,
                  xlabel: str, crossfit: bool, footer: str = "") -> Figure:
    """A grid of forest plots: one y position per measure (in ``measures`` order, top to bottom),
    one colour per ranker; a filled dot is the correlation, its line the bootstrap interval, an
    open diamond (when ``crossfit``) the cross-fitted value. Rows wider than the page wrap; x is
    shared by all panels, with a dashed line at 0; ``footer`` is set at the bottom, above the legend.
    A fixed layout (:func:`place_panel_grid`): FOREST_PANEL_WIDTH_INCHES per panel, beside the
    measure labels of the first column, FOREST_ROW_INCHES per measure.
    """
    y_left = widest(measures, FONT) + TICK_PAD_POINTS * POINT_INCHES
    left = EDGE_INCHES + text_inches("Hg", FONT_TITLE, weight="bold")[1] + LABEL_PAD_POINTS * POINT_INCHES + y_left
    n_cols = forest_columns(max(len(r.panels) for r in rows), MAX_WIDTH_INCHES - left - EDGE_INCHES)
    wrapped = [(row.label, row.panels[i:i + n_cols]) for row in rows for i in range(0, len(row.panels), n_cols)]
    width = min(MAX_WIDTH_INCHES, max(6.0, left + n_cols * FOREST_PANEL_WIDTH_INCHES + EDGE_INCHES))
    step = (width - left - EDGE_INCHES) / n_cols
    figure = Figure(figsize=(width, 1.0), dpi=DPI)
    grid = figure.subplots(len(wrapped), n_cols, squeeze=False, sharex=True, sharey=True)
    grid[0, 0].set_xlim(*forest_limits(rows))  # the axes share x and y: set limits and ticks once
    grid[0, 0].set_ylim(len(measures) - 0.5, -0.5)
    grid[0, 0].set_yticks(range(len(measures)), measures, fontsize=FONT)
    grid[0, 0].xaxis.set_major_locator(MaxNLocator(nbins=4))
    colours = {e: colormaps["tab10"](i % 10) for i, e in enumerate(rankers)}
    for r, (label, panels) in enumerate(wrapped):
        for c in range(n_cols):
            axes = grid[r, c]
            if c >= len(panels):
                axes.set_visible(False)
                continue
            _draw_forest_panel(axes, panels[c], measures, rankers, colours, crossfit)
            axes.tick_params(axis="x", labelbottom=True, labelsize=FONT)
            axes.tick_params(axis="y", length=0, labelsize=FONT)
        grid[r, 0].set_ylabel(label, fontsize=FONT_TITLE, fontweight="bold")
    for axes in grid[-1]:
        axes.set_xlabel(xlabel, fontsize=FONT)
    footer = wrap(footer, width, FONT) if footer else ""
    legend = figure.legend(handles=_forest_legend(rankers, colours, crossfit), loc="lower center",
                           ncols=min(len(rankers) + 2, max(2, int(width // 1.8))), fontsize=FONT, frameon=False,
                           title=footer or None, title_fontsize=FONT)
    legend.get_title().set_color(NOTE_COLOUR)  # the footer sits above the legend's entries
    row_titles = [max(text_inches(p.title, FONT)[1] for p in panels) for _, panels in wrapped]
    place_panel_grid(figure, grid, wrap(title, width), legend, left=left, step=step,
                     panel_width=step - FOREST_GAP_INCHES, panel_height=len(measures) * FOREST_ROW_INCHES,
                     row_titles=row_titles, y_left=y_left)
    return figure


def place_panel_grid(figure: Figure, grid: np.ndarray, title: str, legend, *, left: float, step: float,
                     panel_width: float, panel_height: float, row_titles: list[float], y_left: float) -> None:
    """The fixed layout of a grid of panels (:mod:`frame`): set ``figure``'s height and place its
    axes ``grid`` (rows x columns) under ``title`` (wrapped): row r below its panel titles
    (``row_titles[r]`` inches high), every data area ``panel_width`` x ``panel_height`` inches, a
    column every ``step`` inches from ``left``, x tick labels under each; the x label under the
    last row, ``legend`` (created at "lower center") at the bottom. Each row's y label ends
    ``y_left`` inches left of its first panel."""
    width = figure.get_size_inches()[0]
    ticks = (TICK_POINTS + TICK_PAD_POINTS) * POINT_INCHES + text_inches("0", FONT)[1]
    xlabel = text_inches(grid[-1, 0].get_xlabel(), FONT)[1] + LABEL_PAD_POINTS * POINT_INCHES
    top = EDGE_INCHES + text_inches(title, FONT_TITLE)[1] + 2 * GAP_INCHES
    tops = []
    for row_title in row_titles:
        tops.append(top + row_title + TITLE_PAD_POINTS * POINT_INCHES)
        top = tops[-1] + panel_height + ticks + 3 * GAP_INCHES
    height = top + xlabel + artist_inches(legend)[1] + legend.borderaxespad * FONT * POINT_INCHES + EDGE_INCHES
    figure.set_size_inches(width, height)
    for (r, c), axes in np.ndenumerate(grid):
        place(axes, left + c * step, tops[r], panel_width, panel_height)
        pin_labels(axes, panel_width, panel_height, x_below=ticks + LABEL_PAD_POINTS * POINT_INCHES,
                   y_left=y_left + LABEL_PAD_POINTS * POINT_INCHES)
    legend.set_bbox_to_anchor((0.5, EDGE_INCHES / height), transform=figure.transFigure)
    _set_titles(figure, title, "")


def _draw_forest_panel(axes, panel: ForestPanel, measures, rankers, colours, crossfit) -> None:
    axes.set_title(panel.title, fontsize=FONT, y=1.0, pad=TITLE_PAD_POINTS)
    axes.axvline(0.0, color="#888888", linewidth=0.8, linestyle="--", zorder=0)
    axes.hlines(np.arange(1, len(measures)) - 0.5, 0, 1, transform=axes.get_yaxis_transform(), color="#eeeeee",
                linewidth=0.6, zorder=0)
    if panel.points is None or panel.points.is_empty():
        axes.text(0.5, 0.5, panel.note, transform=axes.transAxes, ha="center", va="center",
                  fontsize=FONT_NOTE, color=NOTE_COLOUR, wrap=True)
        return
    step = 0.7 / max(len(rankers), 1)
    points = panel.points.with_columns(
        y=pl.col("measure").replace_strict(measures, list(range(len(measures))), return_dtype=pl.Float64)
        + (pl.col("E").replace_strict(rankers, list(range(len(rankers))), return_dtype=pl.Float64)
           - (len(rankers) - 1) / 2) * step
    )
    for ranker, part in points.partition_by("E", as_dict=True).items():
        colour = colours[ranker[0]]
        y = part["y"].to_numpy()
        axes.hlines(y, part["ci_low"].fill_null(np.nan).to_numpy(), part["ci_high"].fill_null(np.nan).to_numpy(),
                    color=colour, linewidth=1.4)
        axes.plot(part["value"].to_numpy(), y, "o", color=colour, markersize=4.5)
        if crossfit:
            axes.plot(part["value_crossfit"].fill_null(np.nan).to_numpy(), y, "D", markerfacecolor="none",
                      markeredgecolor=colour, markersize=4.5, markeredgewidth=1.0)


def _forest_legend(rankers, colours, crossfit) -> list[Line2D]:
    handles = [Line2D([], [], color=colours[e], marker="o", markersize=5, linewidth=1.4, label=e)
               for e in rankers]
    if crossfit:
        handles.append(Line2D([], [], color="black", marker="D", markerfacecolor="none", linestyle="none",
                              markersize=5, label="alpha cross-fitted"))
    return handles
