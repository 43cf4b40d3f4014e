"""Start-up against work of the default run's small jobs: ``correlations`` and ``figures``.

Each job kind runs its workflow script (``workflow/scripts/<kind>.py``, the file Snakemake runs)
on inputs of the default run's shape (``config.yaml``: 192 graded samples, subsets Hs-h and M,
three embedders, all five targets; the analysis settings of ``config.yaml``), written to a
temporary folder by this script:

- cold: in a fresh Python process, as Snakemake starts a job (interpreter, imports, numba kernels
  from their on-disk cache, the work), wall seconds from the start of the process to its end;
- first: the same in a fresh process with an empty numba cache (``NUMBA_CACHE_DIR``), as the first
  run after a clone, which compiles every kernel it calls;
- work (the baseline): the script run again in this process, already warm (modules imported,
  kernels compiled), the median of ``--repeats`` runs.

Start-up = cold - work. Ratios: ``cold_over_work`` and ``first_over_work``. The ``snakemake``
object a script reads is stood in by one that names the same inputs, outputs and parameters;
Snakemake's own preamble of a job (unpickling that object) is not timed.

Usage: python benchmarks/startup.py [--repeats N] [--json PATH]
Last line: ``<kind>_cold_over_work=<r> ...`` for each kind.
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
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
KINDS = ("correlations", "figures")
# the default run (config.yaml): subset -> (queries, Nc, Np, K values); three embedders
DEFAULT_SUBSETS = {"Hs-h": (8, 6, 3, (1, 2, 3, 4)), "M": (16, 5, 2, (1, 2))}
DEFAULT_EMBEDDERS = ("ML6", "ME5S", "PML3")


class Named(list):
    """A list whose items also have names, like Snakemake's ``input``, ``output`` and ``log``."""

    def __init__(self, items=(), **named):
        super().__init__([*items, *named.values()])
        self.__dict__.update(named)


def default_run_graded():
    """An analysis table of the default run's shape, with every target."""
    sys.path.insert(0, str(REPO / "src"))
    from retrieval_response.testing.synthetic import synthetic_analysis_table

    return synthetic_analysis_table(DEFAULT_SUBSETS, DEFAULT_EMBEDDERS)


def job_objects(folder: Path) -> dict[str, dict]:
    """Per job kind, the fields of its ``snakemake`` object (plain data, so that a subprocess can
    read them as JSON): the default config's analysis settings and files in ``folder``."""
    import yaml
    from snakemake.utils import validate

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate(config, schema=str(REPO / "workflow/schemas/config.schema.yaml"))
    analysis = config["analysis"]
    graded = str(folder / "graded.parquet")
    segmentations = analysis["segmentations"]
    jobs = {}
    for segmentation in segmentations:
        jobs[f"correlations_{segmentation}"] = {
            "script": "correlations", "input": {"graded": graded},
            "output": {name: str(folder / f"{name}_{segmentation}.parquet")
                       for name in ("correlations", "differences", "resamples")},
            "log": [str(folder / f"correlations_{segmentation}.log")], "wildcards": {"segmentation": segmentation},
            "params": {key: analysis.get(key) for key in ("alpha_grid", "corr_types", "min_segment_samples", "finer_keys",
                                                          "bootstrap_resamples", "seed", "targets", "compat")},
        }
    jobs["figures"] = {
        "script": "figures",
        "input": {"graded": graded,
                  "correlations": [str(folder / f"correlations_{s}.parquet") for s in segmentations],
                  "differences": [str(folder / f"differences_{s}.parquet") for s in segmentations]},
        "output": {"": str(folder / "figures")}, "log": [str(folder / "figures.log")], "wildcards": {},
        "params": {"segmentations": segmentations, "corr_types": analysis["corr_types"],
                   "min_segment_samples": analysis["min_segment_samples"], "embedders": config["embedders"]},
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
                           params=SimpleNamespace(**job["params"]), wildcards=SimpleNamespace(**job["wildcards"]),
                           threads=1)


def run_job(job: dict) -> None:
    """Run ``job``'s workflow script in this process, with its stand-in ``snakemake`` object."""
    builtins.snakemake = snakemake_object(job)
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    runpy.run_path(str(SCRIPTS / f"{job['script']}.py"), run_name="__main__")


def cold_seconds(job: dict, env: dict[str, str]) -> float:
    """Wall seconds of a fresh Python process that runs ``job`` (this script's :func:`run_job`)."""
    command = [sys.executable, __file__, "--run-job", json.dumps(job)]
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per kind (the median is the work)")
    parser.add_argument("--json", metavar="PATH", help="also write the results to this JSON file")
    parser.add_argument("--run-job", metavar="JOB", help=argparse.SUPPRESS)  # a child process: run one job
    args = parser.parse_args()
    if args.run_job:
        run_job(json.loads(args.run_job))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        default_run_graded().write_parquet(folder / "graded.parquet")
        jobs = job_objects(folder)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
        empty_cache = folder / "numba_cache"
        results = {}
        for name, job in jobs.items():  # in the workflow's order: figures reads the correlations
            first = cold_seconds(job, {**env, "NUMBA_CACHE_DIR": str(empty_cache / name)})
            cold = cold_seconds(job, env)
            run_job(job)
            warm = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                run_job(job)
                warm.append(time.perf_counter() - start)
            work = statistics.median(warm)
            results[name] = {"first_seconds": round(first, 3), "cold_seconds": round(cold, 3),
                             "work_seconds": round(work, 3), "startup_seconds": round(cold - work, 3),
                             "cold_over_work": round(cold / work, 2), "first_over_work": round(first / work, 2)}
            print(f"{name}: first {first:.2f} s, cold {cold:.2f} s, work {work:.2f} s (warm, median of "
                  f"{args.repeats}): start-up {cold - work:.2f} s, cold/work {cold / work:.2f}, "
                  f"first/work {first / work:.2f}", flush=True)
    if args.json:
        sys.path.insert(0, str(REPO / "src"))
        from retrieval_response.reports.benchmark_record import write_benchmark_json

        write_benchmark_json(args.json, {"jobs": results, "repeats": args.repeats})
    print(" ".join(f"{name}_cold_over_work={r['cold_over_work']}" for name, r in results.items()))


if __name__ == "__main__":
    main()
