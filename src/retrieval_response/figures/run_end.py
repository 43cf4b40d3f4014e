"""The line that ends a workflow run: where the forest plot is and how to see every figure.

Light on purpose (no matplotlib): the workflow imports it when it parses its rules.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from retrieval_response.figures.manifest import MANIFEST_HTML

FOREST_PLOT = "forest_fit.png"
"""The figure that answers the question at a glance."""
REPORT_COMMAND = "snakemake --report report.html"
"""The command that gathers every figure and table with its caption into one HTML page."""


def results_line(folder: str | os.PathLike = "results/figures", configfiles=()) -> str | None:
    """The one line that ends a workflow run: where the forest plot is (or, without one, the
    figure list) and the command that gathers every figure with its caption into one HTML
    report (with the run's ``--configfile`` when it is not the default). None when ``folder``
    holds no manifest (a run that did not reach the figures)."""
    folder = Path(folder)
    if not (folder / MANIFEST_HTML).is_file():
        return None
    command = REPORT_COMMAND + "".join(f" --configfile {c}" for c in configfiles)
    forest = folder / FOREST_PLOT
    where = (f"the forest plot is {forest}" if forest.is_file()
             else f"no forest plot was drawn ({folder / MANIFEST_HTML} says why)")
    return f"Results: {where}; every figure with its caption: {command}"


def announce_results(folder: str | os.PathLike = "results/figures", configfiles=()) -> None:
    """Print :func:`results_line` to stderr, if there is one (a Snakefile's ``onsuccess``)."""
    line = results_line(folder, configfiles)
    if line:
        print(line, file=sys.stderr, flush=True)
