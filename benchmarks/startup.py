"""Start-up against work of the default run's analysis jobs: ``correlations``, ``segments``
(its rules ``segments`` and ``verdict_segments`` run the same script), ``verdict`` and ``figures``.

Each job runs its workflow script (``workflow/scripts/<kind>.py``, the file Snakemake runs) on
inputs of the default run's shape (``config.yaml``: 192 graded samples, subsets Hs-h and M, three
embedders, all five targets; the analysis settings of ``config.yaml``), written to a temporary
folder by this script, in the workflow's order (the verdict reads the verdict_segments jobs'
tables, figures the other jobs' tables):

- first: in a fresh Python process with an empty numba cache (``NUMBA_CACHE_DIR``), as the first
  run after a clone without install.sh's kernel cache, which compiles every kernel it calls;
- cold: in a fresh Python process, as Snakemake starts a job after install.sh (interpreter,
  imports, numba kernels loaded from the cache that ``python -m
  retrieval_response.analysis.kernel_cache`` wrote, as install.sh runs it; a kernel it missed is
  compiled here, and counted);
- work (the baseline): the script run again in this process, already warm (modules imported,
  kernels compiled), the median of ``--repeats`` runs.

Each is measured in wall seconds and in CPU seconds (user + system, of the child process or of
this one, with the processes they fork: the figures job draws its PNGs in its rule's two threads):
on a loaded machine the wall clock counts waiting for a core, CPU time does not.
Start-up = cold - work. Ratios: ``cold_over_work`` and ``first_over_work`` (wall), and
``cold_cpu_over_work_cpu``. The ``snakemake`` object a script reads is stood in by one that names
the same inputs, outputs, log, parameters, threads and wildcards as its rule
(``workflow/rules/analysis.smk``, ``workflow/rules/decide.smk``); Snakemake's own preamble of a
job (unpickling that object) is not timed.

Usage: python benchmarks/startup.py [--repeats N] [--kinds KIND ...] [--json PATH] [--smoke]
(``--kinds segments`` times the segments and verdict_segments jobs; ``--smoke`` times one segments
job once, without writing the kernel cache first: checks that it runs.)
Last line: ``<job>_cold_over_work=<r> ...`` for each job timed (e.g. ``correlations_fit``,
``verdict_segments_all``, ``figures``).
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import resource
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

# Only the standard library at the top: a child process that runs a job imports what the job's
# script imports, and nothing more.
REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow/scripts"
# the default run (config.yaml): subset -> (queries, Nc, Np, K values); three embedders
DEFAULT_SUBSETS = {"Hs-h": (8, 6, 3, (1, 2, 3, 4)), "M": (16, 5, 2, (1, 2))}
DEFAULT_EMBEDDERS = ("ML6", "ME5S", "PML3")
KINDS = ("correlations", "segments", "verdict", "figures")


class Named(list):
    """A list whose items also have names, like Snakemake's ``input``, ``output`` and ``log``."""

    def __init__(self, items=(), **named):
        super().__init__([*items, *named.values()])
        self.__dict__.update(named)
        self._names = list(named)

    def keys(self) -> list[str]:
        """The names of the named items."""
        return self._names

    def items(self) -> list[tuple[str, object]]:
        """The named items with their names."""
        return [(name, self.__dict__[name]) for name in self._names]

    def get(self, name: str, default=None):
        """The item named ``name``, else ``default``."""
        return self.__dict__[name] if name in self._names else default


def default_run_graded():
    """An analysis table of the default run's shape, with every target."""
    sys.path.insert(0, str(REPO / "src"))
    from retrieval_response.testing.synthetic import synthetic_analysis_table

    return synthetic_analysis_table(DEFAULT_SUBSETS, DEFAULT_EMBEDDERS)


def job_objects(folder: Path) -> dict[str, dict]:
    """Per job of the default run's analysis, in the workflow's order, the fields of its
    ``snakemake`` object (plain data, so that a subprocess can read them as JSON): the inputs,
    outputs, log, params, threads and wildcards its rule gives its script
    (``workflow/rules/analysis.smk``: correlations, segments, figures;
    ``workflow/rules/decide.smk``: verdict_segments, verdict), with the default config's analysis
    settings and files in ``folder``. ``script`` is the workflow script the job runs, its kind."""
    import yaml
    from snakemake.utils import validate

    sys.path.insert(0, str(REPO / "src"))
    from retrieval_response.analysis.segments import VERDICT_SEGMENTATIONS, segment_minimum

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate(config, schema=str(REPO / "workflow/schemas/config.schema.yaml"))
    analysis = config["analysis"]
    candidates = config["verdict"].get("candidates")

    def minimum(segmentation: str) -> int:
        """The rules' ``min_segment_samples`` of ``segmentation`` (``segments.segment_minimum``)."""
        return segment_minimum(analysis["min_segment_samples"], segmentation)

    graded = str(folder / "graded.parquet")
    segmentations = analysis["segmentations"]
    figure_segmentations = sorted({*segmentations, "ratio"})  # FIGURE_SEGMENTATIONS, workflow/rules/analysis.smk
    jobs = {}
    for segmentation in segmentations:  # rule correlations
        jobs[f"correlations_{segmentation}"] = {
            "script": "correlations", "input": {"graded": graded},
            "output": {name: str(folder / f"{name}_{segmentation}.parquet")
                       for name in ("correlations", "differences", "resamples")},
            "log": [str(folder / f"correlations_{segmentation}.log")], "wildcards": {"segmentation": segmentation},
            "threads": 2,
            "params": {**{key: analysis.get(key) for key in ("alpha_grid", "corr_types", "finer_keys",
                                                             "bootstrap_resamples", "seed", "targets", "compat")},
                       "min_segment_samples": minimum(segmentation)},
        }
    # rule segments: the figures' segmentations (they include the analysed ones replication reads)
    for segmentation in figure_segmentations:
        jobs[f"segments_{segmentation}"] = {
            "script": "segments", "input": {"graded": graded},
            "output": {"segments": str(folder / f"segments_{segmentation}.parquet")},
            "log": [str(folder / f"segments_{segmentation}.log")], "wildcards": {"segmentation": segmentation},
            "threads": 1,
            "params": {**{key: analysis.get(key) for key in ("finer_keys", "targets")},
                       "min_segment_samples": minimum(segmentation), "verdict_samples": False},
        }
    for segmentation in VERDICT_SEGMENTATIONS:  # rule verdict_segments: the segments script, on the verdict's samples
        jobs[f"verdict_segments_{segmentation}"] = {
            "script": "segments", "input": {"graded": graded},
            "output": {"segments": str(folder / f"verdict_segments_{segmentation}.parquet")},
            "log": [str(folder / f"verdict_segments_{segmentation}.log")], "wildcards": {"segmentation": segmentation},
            "threads": 1,
            "params": {"min_segment_samples": minimum(segmentation), "finer_keys": [],
                       "targets": analysis.get("targets"), "verdict_samples": True, "candidates": candidates},
        }
    jobs["verdict"] = {  # rule verdict (without the judge's check tables: their rules are not timed here)
        "script": "verdict",
        "input": {"graded": graded,
                  "segments": [str(folder / f"verdict_segments_{s}.parquet") for s in VERDICT_SEGMENTATIONS]},
        "output": {"table": str(folder / "verdict.parquet"), "text": str(folder / "verdict.txt"),
                   "rst": str(folder / "verdict.rst")},
        "log": [str(folder / "verdict.log")], "wildcards": {}, "threads": 2,
        "params": {**{key: analysis.get(key) for key in ("alpha_grid", "bootstrap_resamples", "seed", "targets")},
                   "corr_type": analysis["corr_types"][0], "compat": analysis["compat"], "candidates": candidates},
    }
    jobs["figures"] = {  # rule figures: its threads are the processes that draw the PNGs
        "script": "figures",
        "input": {"graded": graded,
                  "segments": [str(folder / f"segments_{s}.parquet") for s in figure_segmentations],
                  "correlations": [str(folder / f"correlations_{s}.parquet") for s in segmentations],
                  "differences": [str(folder / f"differences_{s}.parquet") for s in segmentations],
                  "verdict": str(folder / "verdict.parquet")},
        "output": {"": str(folder / "figures")}, "log": [str(folder / "figures.log")], "wildcards": {},
        "threads": 2,
        "params": {"segmentations": segmentations, "figure_segmentations": figure_segmentations,
                   "corr_types": analysis["corr_types"], "min_segment_samples": minimum(figure_segmentations[0]),
                   "rankers": config["rankers"]},
    }
    return jobs


def snakemake_object(job: dict) -> SimpleNamespace:
    """The stand-in ``snakemake`` object of ``job`` (from :func:`job_objects`)."""
    def named(value):
        if isinstance(value, dict):
            unnamed = [v for k, v in value.items() if not k]
            return Named(unnamed, **{k: v for k, v in value.items() if k})
        return Named(value)

    return SimpleNamespace(input=named(job["input"]), output=named(job["output"]), log=named(job["log"]),
                           params=Named(**job["params"]), wildcards=SimpleNamespace(**job["wildcards"]),
                           threads=job["threads"])


def run_job(job: dict) -> None:
    """Run ``job``'s workflow script in this process, with its stand-in ``snakemake`` object."""
    builtins.snakemake = snakemake_object(job)
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    runpy.run_path(str(SCRIPTS / f"{job['script']}.py"), run_name="__main__")


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cold_seconds(job: dict, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of a fresh Python process that runs ``job`` (this script's
    :func:`run_job`)."""
    command = [sys.executable, __file__, "--run-job", json.dumps(job)]
    cpu_before = children_cpu_seconds()
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - start, children_cpu_seconds() - cpu_before


def warm_seconds(job: dict) -> tuple[float, float]:
    """Wall and CPU seconds of ``job`` run in this (warm) process; the CPU seconds include those of
    the processes it forked (the figures job's drawing processes), as a cold run's do."""
    cpu_before = time.process_time() + children_cpu_seconds()
    start = time.perf_counter()
    run_job(job)
    return time.perf_counter() - start, time.process_time() + children_cpu_seconds() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per kind (the median is the work)")
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS,
                        help="job kinds to time (the others only run once, for the inputs of the next)")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument("--run-job", metavar="JOB", help=argparse.SUPPRESS)  # a child process: run one job
    parser.add_argument("--smoke", action="store_true", help="one segments job, once: checks that it runs")
    args = parser.parse_args()
    if args.run_job:
        run_job(json.loads(args.run_job))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        default_run_graded().write_parquet(folder / "graded.parquet")
        jobs = job_objects(folder)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
        installed = {**env, "NUMBA_CACHE_DIR": str(folder / "numba_installed")}
        cpu_before = children_cpu_seconds()
        if args.smoke:  # the first segments job only; it calls no kernel, so the cache is left unwritten
            args.kinds, args.repeats = ["segments"], 1
            jobs = dict([next((name, job) for name, job in jobs.items() if job["script"] == "segments")])
        else:
            subprocess.run([sys.executable, "-m", "retrieval_response.analysis.kernel_cache"], check=True,
                           env=installed)
        kernel_cache_cpu = children_cpu_seconds() - cpu_before
        results = {}
        for name, job in jobs.items():
            if job["script"] not in args.kinds:
                run_job(job)
                continue
            first, first_cpu = cold_seconds(job, {**env, "NUMBA_CACHE_DIR": str(folder / "numba_empty" / name)})
            cold, cold_cpu = cold_seconds(job, installed)
            run_job(job)
            warm = [warm_seconds(job) for _ in range(args.repeats)]
            work, work_cpu = statistics.median(w for w, _ in warm), statistics.median(c for _, c in warm)
            results[name] = {"first_seconds": round(first, 3), "cold_seconds": round(cold, 3),
                             "work_seconds": round(work, 3), "startup_seconds": round(cold - work, 3),
                             "first_cpu_seconds": round(first_cpu, 3), "cold_cpu_seconds": round(cold_cpu, 3),
                             "work_cpu_seconds": round(work_cpu, 3),
                             "startup_cpu_seconds": round(cold_cpu - work_cpu, 3),
                             "cold_over_work": round(cold / work, 2), "first_over_work": round(first / work, 2),
                             "cold_cpu_over_work_cpu": round(cold_cpu / work_cpu, 2)}
            print(f"{name}: first {first:.2f} s, cold {cold:.2f} s ({cold_cpu:.2f} s CPU), work {work:.2f} s "
                  f"({work_cpu:.2f} s CPU; warm, median of {args.repeats}): start-up {cold - work:.2f} s "
                  f"({cold_cpu - work_cpu:.2f} s CPU), cold/work {cold / work:.2f}, first/work {first / work:.2f}",
                  flush=True)
    if args.json:
        sys.path.insert(0, str(REPO / "src"))
        from retrieval_response.reports.benchmark_record import write_benchmark_json

        write_benchmark_json(args.json, {"jobs": results, "repeats": args.repeats,
                                         "kernel_cache_cpu_seconds": round(kernel_cache_cpu, 3)})
    print(" ".join(f"{name}_cold_over_work={r['cold_over_work']}" for name, r in results.items()))


if __name__ == "__main__":
    main()
