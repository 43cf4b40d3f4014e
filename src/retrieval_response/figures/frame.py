"""A fixed layout for the figures: the texts around the panels measured once, panels placed in inches.

Matplotlib's constrained layout measures every tick label of every panel (twice), and drawing
then measures them again to place titles and axis labels. A figure kind here knows which texts
surround its panels (titles, tick labels, axis labels, legend, footer): it measures those with
:func:`text_inches` / :func:`artist_inches`, sizes the figure to hold them and places each axes
with :func:`place`; :func:`pin_labels` fixes the axis labels so that drawing does not measure the
tick labels again.
"""

from __future__ import annotations

from functools import cache

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

EDGE_INCHES = 0.1  # blank border of a figure
GAP_INCHES = 0.06  # between a text and what it labels
TITLE_PAD_POINTS = 6.0  # panel title above its axes (matplotlib's default)
TICK_PAD_POINTS = 3.5  # tick label to its tick (matplotlib's default)
TICK_POINTS = 3.5  # tick length (matplotlib's default)
LABEL_PAD_POINTS = 4.0  # axis label to its tick labels (matplotlib's default)
POINT_INCHES = 1 / 72


@cache
def _scratch() -> Figure:
    """A figure to measure texts on (the figures' fonts at their DPI), never drawn."""
    figure = Figure(dpi=100)
    FigureCanvasAgg(figure)
    return figure


def text_inches(text: str, size: float, *, weight: str = "normal", rotation: float = 0) -> tuple[float, float]:
    """Width and height in inches of ``text`` (every line) set at ``size`` pt, ``weight``,
    turned by ``rotation`` degrees, as the figures draw it; (0, 0) for an empty text."""
    if not text:
        return 0.0, 0.0
    scratch = _scratch()
    box = Text(0, 0, text, fontsize=size, fontweight=weight, rotation=rotation)
    box.set_figure(scratch)
    extent = box.get_window_extent(scratch.canvas.get_renderer())
    return extent.width / scratch.dpi, extent.height / scratch.dpi


def widest(texts, size: float, *, weight: str = "normal") -> float:
    """The largest width in inches of ``texts`` at ``size`` pt (0 without texts)."""
    return max((text_inches(t, size, weight=weight)[0] for t in texts), default=0.0)


def artist_inches(artist) -> tuple[float, float]:
    """Width and height in inches of a legend (or another artist with a window extent) as drawn."""
    scratch = _scratch()
    extent = artist.get_window_extent(scratch.canvas.get_renderer())
    return extent.width / scratch.dpi, extent.height / scratch.dpi


def place(axes, left: float, top: float, width: float, height: float) -> None:
    """Put ``axes`` ``left`` inches from its figure's left edge and ``top`` inches below its top
    edge, ``width`` x ``height`` inches (the data area; the figure has its final size)."""
    figure_width, figure_height = axes.get_figure(root=True).get_size_inches()
    axes.set_position((left / figure_width, 1 - (top + height) / figure_height, width / figure_width,
                       height / figure_height))


def pin_labels(axes, width: float, height: float, *, x_below: float = 0.0, y_left: float = 0.0) -> None:
    """Fix the axis labels of ``axes`` (``width`` x ``height`` inches): the x label's top
    ``x_below`` inches under the axes, the y label's right edge ``y_left`` inches left of it."""
    axes.xaxis.set_label_coords(0.5, -x_below / height)  # matplotlib aligns an x label's top there
    axes.yaxis.set_label_coords(-y_left / width, 0.5)  # and a y label's right edge (turned text's bottom)
