"""Writing a set of figures as PNGs in several processes: the drawing (Agg) and the PNG encoding,
the larger part of the figures job, split across the cores the job was given.

The figures are built once, in this process; forked children inherit them (nothing is pickled)
and each writes its share. Drawing time follows a figure's pixel count, so the shares are of
about equal area.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from matplotlib.figure import Figure

from retrieval_response.figures.plotting import save_png


def shares(figures: dict[str, Figure], processes: int) -> list[list[str]]:
    """The figure names split into at most ``processes`` non-empty shares of about equal area
    (largest figure first, each to the share with the least area so far); one share per process."""
    loads = [0.0] * max(1, min(processes, len(figures)))
    split: list[list[str]] = [[] for _ in loads]
    for name, figure in sorted(figures.items(), key=lambda item: -item[1].get_size_inches().prod()):
        least = loads.index(min(loads))
        split[least].append(name)
        loads[least] += figure.get_size_inches().prod()
    return [share for share in split if share]


def _save_share(figures: dict[str, Figure], names: list[str], folder: Path) -> None:
    for name in names:
        save_png(figures[name], folder / name)


def save_pngs(figures: dict[str, Figure], folder: str | os.PathLike, processes: int = 1) -> None:
    """Write each figure to ``folder``/<name> as PNG (:func:`~.plotting.save_png`), in
    ``processes`` processes (this one and forked children; 1 or a platform without fork: this one
    only), each writing one of :func:`shares`. Raises RuntimeError if a child fails (its traceback
    is on stderr); the other files are written all the same."""
    folder = Path(folder)
    split = shares(figures, processes)
    if len(split) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        _save_share(figures, list(figures), folder)
        return
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=_save_share, args=(figures, share, folder)) for share in split[1:]]
    for child in children:
        child.start()
    _save_share(figures, split[0], folder)
    for child in children:
        child.join()
    failed = [name for child, share in zip(children, split[1:], strict=True) if child.exitcode for name in share]
    if failed:
        raise RuntimeError(f"figures not written (a drawing process failed): {', '.join(failed)}")
