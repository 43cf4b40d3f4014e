"""Where the ``figures`` job's time goes: building the figures, laying them out, drawing, PNG encoding.

The job's inputs are those of benchmarks/startup.py (the default run's shape: 192 graded samples,
every target; the other analysis jobs run first, in this process). The figures are then built
and written here, warm (modules imported, one full run before), in CPU seconds (user + system):

- build: ``analysis_figures.figure_set`` (tables to matplotlib artists, every figure);
- layout: the constrained layout engine run once per figure, which is all a fixed layout would
  save (after it the engine is switched off, so the next steps do not lay out again);
- draw: the Agg canvas drawing each figure (text rendering of tick labels, cell values, titles);
- encode: each canvas written as PNG (Pillow, zlib level 6, as ``savefig``), and again at level 1.

Baseline, in the same run: the job's own ``render_figures`` (what the script calls), the median
of ``--repeats`` runs. Ratios: each phase's share of the baseline. (The figures have a fixed
layout now: no layout engine runs, the layout phase is 0.)

The job as a whole, as Snakemake runs it: a fresh Python process runs ``workflow/scripts/figures.py``
(start-up, imports, reading the tables, building and writing every figure; ``startup.cold_seconds``),
with one thread and with the rule's two (the PNGs drawn in two processes), in wall seconds and in
CPU seconds of the process and its children; with ``--previous TREE`` (a checkout of the previous
code, e.g. ``git worktree add /tmp/previous <commit>``) also that tree's own script and package
with one thread, the runs interleaved. Medians of ``--repeats`` runs each.

Usage: python benchmarks/figures.py [--repeats N] [--previous TREE] [--json PATH] [--smoke]
(``--smoke``: one subset, one ranker and the grade target, a 5-value grid with 20 resamples, one
run of each, no warm-up, the fresh process with one thread only: checks that it runs.)
Last line: ``build_share=<r> layout_share=<r> draw_share=<r> encode_share=<r>`` (and, with
``--previous``, ``job_cpu_over_previous=<r>``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image
from startup import REPO, children_cpu_seconds, default_run_graded, job_objects, run_job

from retrieval_response.figures.analysis_figures import figure_set, render_figures
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.tables.workflow_tables import read_analysis_table
from retrieval_response.testing.synthetic import synthetic_analysis_table

SMOKE_PARAMS = {"alpha_grid": "linear:5", "bootstrap_resamples": 20, "targets": ["grade"]}
"""The analysis settings of ``--smoke`` (the default run's otherwise)."""
SMOKE_SUBSETS, SMOKE_RANKERS = {"M": (16, 5, 2, (1, 2))}, ("ML6",)
"""The graded table of ``--smoke``: one subset of the default run, one ranker."""


def figure_inputs(job: dict) -> tuple[tuple, dict]:
    """The positional and keyword arguments of ``figure_set`` / ``render_figures`` for the
    ``figures`` job (from ``startup.job_objects``), as its script reads them."""
    params = job["params"]
    segmentations, figure_segmentations = params["segmentations"], params["figure_segmentations"]
    args = (read_analysis_table(job["input"]["graded"]),
            dict(zip(segmentations, map(pl.read_parquet, job["input"]["correlations"]), strict=True)),
            dict(zip(segmentations, map(pl.read_parquet, job["input"]["differences"]), strict=True)),
            dict(zip(figure_segmentations, map(pl.read_parquet, job["input"]["segments"]), strict=True)))
    kwargs = {"corr_types": params["corr_types"], "min_segment_samples": params["min_segment_samples"],
              "rankers": params["rankers"], "verdict": pl.read_parquet(job["input"]["verdict"])}
    return args, kwargs


def cpu(call) -> tuple[float, object]:
    """CPU seconds of ``call()`` in this process, and what it returned."""
    start = time.process_time()
    result = call()
    return time.process_time() - start, result


def phases(args: tuple, kwargs: dict) -> dict[str, float]:
    """CPU seconds of each phase (module docstring) over every figure, and the figures' count."""
    build, (figures, _) = cpu(lambda: figure_set(*args, **kwargs))
    seconds = {"build": build, "layout": 0.0, "draw": 0.0, "encode": 0.0, "encode_level1": 0.0}
    for figure in figures.values():
        FigureCanvasAgg(figure)
        engine = figure.get_layout_engine()
        if engine is not None:
            seconds["layout"] += cpu(lambda figure=figure, engine=engine: engine.execute(figure))[0]
            figure.set_layout_engine("none")
        seconds["draw"] += cpu(figure.canvas.draw)[0]
        image = Image.fromarray(np.asarray(figure.canvas.buffer_rgba()))
        for key, level in (("encode", 6), ("encode_level1", 1)):
            seconds[key] += cpu(lambda image=image, level=level: image.save(io.BytesIO(), format="png",
                                                                               compress_level=level))[0]
    return {**seconds, "figures": len(figures)}


def job_seconds(job: dict, tree: Path, threads: int) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its children) of a fresh Python process that runs
    ``job`` with ``threads`` threads: ``tree``'s benchmarks/startup.py runs its own workflow script
    with its own package (``tree``/src)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    command = [sys.executable, str(tree / "benchmarks/startup.py"), "--run-job", json.dumps({**job, "threads": threads})]
    cpu_before = children_cpu_seconds()
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - start, children_cpu_seconds() - cpu_before


def job_runs(job: dict, previous: Path | None, repeats: int, smoke: bool = False) -> dict[str, float]:
    """Medians of :func:`job_seconds`, interleaved: this tree with 1 and 2 threads (``job_``,
    ``job_threads2_``; 1 only when ``smoke``) and ``previous`` with 1 thread (``previous_job_``), if given."""
    variants = {"job": (REPO, 1)} if smoke else {"job": (REPO, 1), "job_threads2": (REPO, 2)}
    if previous is not None:
        variants["previous_job"] = (previous, 1)
    runs = {name: [] for name in variants}
    for _ in range(repeats):
        for name, (tree, threads) in variants.items():
            runs[name].append(job_seconds(job, tree, threads))
    return {f"{name}_{unit}": round(statistics.median(run[i] for run in values), 3)
            for name, values in runs.items() for i, unit in enumerate(("seconds", "cpu_seconds"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of the baseline and of the phases (medians)")
    parser.add_argument("--previous", metavar="TREE", type=Path,
                        help="a checkout of the previous code: its figures job is timed too")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="a small grid and bootstrap, one run: checks that it runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        graded = synthetic_analysis_table(SMOKE_SUBSETS, SMOKE_RANKERS) if args.smoke else default_run_graded()
        graded.write_parquet(folder / "graded.parquet")
        jobs = job_objects(folder)
        if args.smoke:
            args.repeats = 1
            for job in jobs.values():
                job["params"].update({key: value for key, value in SMOKE_PARAMS.items() if key in job["params"]})
        for name, job in jobs.items():
            if name != "figures":
                run_job(job)
        inputs, kwargs = figure_inputs(jobs["figures"])

        def render():
            return render_figures(*inputs, folder / "figures", **kwargs)

        if not args.smoke:
            render()  # warm-up: imports, font cache
        baseline = statistics.median(cpu(render)[0] for _ in range(args.repeats))
        runs = [phases(inputs, kwargs) for _ in range(args.repeats)]
        jobs["figures"]["output"] = {"": str(folder / "figures_job")}
        whole = job_runs(jobs["figures"], args.previous, args.repeats, args.smoke)
    measured = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    measured["figures"] = int(measured["figures"])
    shares = {f"{key}_share": round(measured[key] / baseline, 3) for key in ("build", "layout", "draw", "encode")}
    print(f"render_figures (baseline): {baseline:.2f} s CPU for {measured['figures']} figures; build "
          f"{measured['build']:.2f} s, constrained layout {measured['layout']:.2f} s, draw {measured['draw']:.2f} s, "
          f"PNG encode {measured['encode']:.2f} s (zlib level 1: {measured['encode_level1']:.2f} s)")
    print("the job, a fresh process: " + ", ".join(
        f"{name} {whole[name + '_seconds']:.2f} s ({whole[name + '_cpu_seconds']:.2f} s CPU)"
        for name in ("job", "job_threads2", "previous_job") if name + "_seconds" in whole))
    if "previous_job_cpu_seconds" in whole:
        shares["job_cpu_over_previous"] = round(whole["job_cpu_seconds"] / whole["previous_job_cpu_seconds"], 3)
    if args.json:
        write_benchmark_json(args.json, {"baseline_cpu_seconds": round(baseline, 3), "repeats": args.repeats,
                                         **{f"{key}_cpu_seconds": round(value, 3) for key, value in measured.items()
                                            if key != "figures"},
                                         "figures": measured["figures"], **whole, **shares})
    print(" ".join(f"{key}={value}" for key, value in shares.items()))


if __name__ == "__main__":
    main()
