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
of ``--repeats`` runs. Ratios: each phase's share of the baseline.

Usage: python benchmarks/figures.py [--repeats N] [--json PATH]
Last line: ``build_share=<r> layout_share=<r> draw_share=<r> encode_share=<r>``.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image
from startup import default_run_graded, job_objects, run_job

from retrieval_response.figures.analysis_figures import figure_set, render_figures
from retrieval_response.reports.benchmark_record import write_benchmark_json
from retrieval_response.tables.workflow_tables import read_analysis_table


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
              "embedders": params["rankers"], "verdict": pl.read_parquet(job["input"]["verdict"])}
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of the baseline and of the phases (medians)")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        default_run_graded().write_parquet(folder / "graded.parquet")
        jobs = job_objects(folder)
        for name, job in jobs.items():
            if name != "figures":
                run_job(job)
        inputs, kwargs = figure_inputs(jobs["figures"])

        def render():
            return render_figures(*inputs, folder / "figures", **kwargs)

        render()  # warm-up: imports, font cache
        baseline = statistics.median(cpu(render)[0] for _ in range(args.repeats))
        runs = [phases(inputs, kwargs) for _ in range(args.repeats)]
    measured = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    measured["figures"] = int(measured["figures"])
    shares = {f"{key}_share": round(measured[key] / baseline, 3) for key in ("build", "layout", "draw", "encode")}
    print(f"render_figures (baseline): {baseline:.2f} s CPU for {measured['figures']} figures; build "
          f"{measured['build']:.2f} s, constrained layout {measured['layout']:.2f} s, draw {measured['draw']:.2f} s, "
          f"PNG encode {measured['encode']:.2f} s (zlib level 1: {measured['encode_level1']:.2f} s)")
    if args.json:
        write_benchmark_json(args.json, {"baseline_cpu_seconds": round(baseline, 3), "repeats": args.repeats,
                                         **{f"{key}_cpu_seconds": round(value, 3) for key, value in measured.items()
                                            if key != "figures"},
                                         "figures": measured["figures"], **shares})
    print(" ".join(f"{key}={value}" for key, value in shares.items()))


if __name__ == "__main__":
    main()
