"""Figures written in several processes: every figure once, in shares of about equal area, the
same PNGs as one process writes; a failing drawing process is reported, not silently skipped."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from retrieval_response.figures import render_pool
from retrieval_response.figures.render_pool import save_pngs, shares

pytestmark = pytest.mark.unit


def _figures(sizes: dict[str, tuple[float, float]]) -> dict[str, Figure]:
    figures = {}
    for name, size in sizes.items():
        figure = Figure(figsize=size, dpi=50)
        figure.add_subplot().plot([0, 1], [1, 0])
        figure.suptitle(name)
        figures[name] = figure
    return figures


SIZES = {"big.png": (10.0, 10.0), "a.png": (5.0, 10.0), "b.png": (5.0, 8.0), "c.png": (4.0, 4.0)}


def test_shares_hold_every_figure_once_and_balance_the_area():
    split = shares(_figures(SIZES), 2)
    assert sorted(name for share in split for name in share) == sorted(SIZES)
    assert split == [["big.png"], ["a.png", "b.png", "c.png"]]  # areas 100 and 106


@pytest.mark.parametrize("processes", [1, 5])
def test_no_more_shares_than_processes_or_figures(processes):
    split = shares(_figures(SIZES), processes)
    assert len(split) == min(processes, len(SIZES)) and all(split)


def test_two_processes_write_the_same_pngs_as_one(tmp_path):
    figures = _figures(SIZES)
    save_pngs(figures, tmp_path / "one", 1)
    save_pngs(figures, tmp_path / "two", 2)
    for name in SIZES:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert not [p for p in (tmp_path / "two").iterdir() if p.name not in SIZES]


def test_a_failing_process_is_reported_with_its_figures(tmp_path, monkeypatch):
    def fail_in_child(figure, path):
        if path.name != "big.png":  # the share of the forked child
            raise OSError("disk full")
        path.write_bytes(b"png")

    monkeypatch.setattr(render_pool, "save_png", fail_in_child)
    with pytest.raises(RuntimeError, match="a.png, b.png, c.png"):
        save_pngs(_figures(SIZES), tmp_path, 2)
    assert (tmp_path / "big.png").is_file()
