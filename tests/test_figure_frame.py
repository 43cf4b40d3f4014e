"""The fixed layout of the figures: texts measured as drawn, axes placed in inches, axis labels pinned."""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from retrieval_response.figures.frame import pin_labels, place, text_inches, widest

pytestmark = pytest.mark.unit


def test_texts_are_measured_as_the_figures_draw_them():
    width, height = text_inches("Spearman  ME5S", 9)
    assert text_inches("", 9) == (0.0, 0.0)
    assert text_inches("Spearman  ME5S", 18)[0] == pytest.approx(2 * width, rel=0.1)
    assert text_inches("Spearman  ME5S\nn=16", 9)[1] == pytest.approx(2 * height, rel=0.25)
    turned = text_inches("Spearman  ME5S", 9, rotation=90)
    assert turned == pytest.approx((height, width), abs=0.02)
    assert widest(["T", "Spearman  ME5S", "nDCG"], 9) == width and widest([], 9) == 0.0


def test_axes_are_placed_in_inches_from_the_top_left_and_their_labels_stay_put():
    figure = Figure(figsize=(8, 6), dpi=100)
    axes = figure.add_axes((0, 0, 1, 1))
    place(axes, 1.0, 0.5, 4.0, 2.0)
    assert tuple(axes.get_position().bounds) == pytest.approx((1 / 8, 1 - 2.5 / 6, 4 / 8, 2 / 6))
    axes.set_xlabel("correlation")
    axes.set_ylabel("Hs")
    pin_labels(axes, 4.0, 2.0, x_below=0.3, y_left=0.5)
    FigureCanvasAgg(figure).draw()
    x_label, y_label = (label.get_window_extent() for label in (axes.xaxis.label, axes.yaxis.label))
    assert x_label.y1 == pytest.approx(100 * (6 - 2.5 - 0.3), abs=1)  # its top 0.3 in under the axes
    assert y_label.x1 == pytest.approx(100 * (1.0 - 0.5), abs=1)  # its right edge 0.5 in left of them
