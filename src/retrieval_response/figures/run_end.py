"""The line that ends a workflow run: where the forest plot is and how to see every figure; the
names of the figures the workflow refers to and their categories in the Snakemake report.

Light on purpose (no matplotlib): the workflow imports it when it parses its rules.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from retrieval_response.figures.manifest import MANIFEST_HTML

FOREST_PLOT = "forest_fit.png"
"""Every measure's correlation with its interval: the detail under the verdict."""
FOREST_ALL = "forest_all.png"
"""The same on all samples: the forest plot of traces, which have no narrow and wide segments."""
FEEDBACK_RATE = "feedback_rate.png"
"""The users' feedback against each measure's value, binned: what a team monitoring a measure sees."""
VERDICT_FIGURE = "verdict.png"
"""The verdict on all samples: the figure the report and figures.html open on."""
VERDICT_DETAIL = "verdict_fit.png"
"""The verdict on the narrow and wide segments."""
VERDICT_EMBEDDED = "verdict_embedded.rst"
"""The verdict figure as reStructuredText that embeds it: what the report's front page includes
(Snakemake's own ``embeddedfigure`` directive of this version links the file instead)."""
VERDICT_CATEGORY = "1. Verdict"
"""The report's first category (categories are listed by name): the verdict figures and words."""
FIGURES_CATEGORY = "2. Figures"
"""The report's category of every other figure and of the figure manifest."""
REPORT_COMMAND = "snakemake --report report.html"
"""The command that gathers every figure and table with its caption into one HTML page."""


def report_category(wildcards) -> str:
    """The report category of ``results/figures/<figure>.png`` (or ``.html``) for the wildcards
    of its file: :data:`VERDICT_CATEGORY` for the verdict figures, else :data:`FIGURES_CATEGORY`."""
    return VERDICT_CATEGORY if f"{wildcards.figure}.png" in (VERDICT_FIGURE, VERDICT_DETAIL) else FIGURES_CATEGORY


def results_line(folder: str | os.PathLike = "results/figures", configfiles=()) -> str | None:
    """The one line that ends a workflow run: where the forest plot is (or, without one, the
    figure list) and the command that gathers every figure with its caption into one HTML
    report (with the run's ``--configfile`` when it is not the default). None when ``folder``
    holds no manifest (a run that did not reach the figures)."""
    folder = Path(folder)
    if not (folder / MANIFEST_HTML).is_file():
        return None
    command = REPORT_COMMAND + "".join(f" --configfile {c}" for c in configfiles)
    forest = next((folder / name for name in (FOREST_PLOT, FOREST_ALL) if (folder / name).is_file()), None)
    where = (f"the forest plot is {forest}" if forest
             else f"no forest plot was drawn ({folder / MANIFEST_HTML} says why)")
    return f"Results: {where}; every figure with its caption: {command}"


def announce_results(folder: str | os.PathLike = "results/figures", configfiles=()) -> None:
    """Print :func:`results_line` to stderr, if there is one (a Snakefile's ``onsuccess``)."""
    line = results_line(folder, configfiles)
    if line:
        print(line, file=sys.stderr, flush=True)
