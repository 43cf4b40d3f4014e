"""Dry-run time of the workflow on a config of the paper's scale.

Writes, in a temporary folder, nine synthetic datasets in the generic JSON-lines layout
(6,112 queries over the paper's nine subsets A, Hp-e|m|h, Hs-e|m|h, M, N), four embedders and
designs such that each embedder ranks 10,748 samples (as in the published set), LLM work in
10 shards per (dataset, embedder, design), then times
``snakemake -n`` on it. Baseline for comparison: a dry run of the same workflow with one
dataset of 10 queries, timed in the same run.

Wall and CPU seconds (user + system) are both reported: on a loaded machine the wall clock
counts waiting for a core. Last line: ``dry_run_seconds=<s> dry_run_cpu_seconds=<s> jobs=<n>``.
``--smoke`` times the baseline only and reports it for both: checks that it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from retrieval_response.reports.benchmark_record import write_benchmark_json

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
LLM = {role: {"model": "openai/gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"} for role in ("generator", "grader")}
SUBSETS = ["A", "Hp-e", "Hp-m", "Hp-h", "Hs-e", "Hs-m", "Hs-h", "M", "N"]
TWO_DESIGN_QUERIES = [773, 773, 773, 773, 772, 772]  # 6 subsets ranked with two designs each
ONE_DESIGN_QUERIES = [492, 492, 492]  # 3 subsets ranked with one design


def write_dataset(path: Path, subset: str, n_queries: int) -> None:
    """Synthetic query-texts samples: 6 positives and 14 negatives per query."""
    with path.open("w") as f:
        for i in range(n_queries):
            record = {
                "id": f"{subset}-{i}",
                "q": f"question {i} of {subset}",
                "p": [f"positive {j} for {subset} {i}" for j in range(6)],
                "n": [f"negative {j} for {subset} {i}" for j in range(14)],
            }
            f.write(json.dumps(record) + "\n")


def paper_scale_config(folder: Path) -> dict:
    """A config with the paper's numbers of queries, subsets, embedders and ranked samples."""
    datasets = {}
    for subset, n_queries in zip(SUBSETS, TWO_DESIGN_QUERIES + ONE_DESIGN_QUERIES, strict=True):
        source = folder / f"{subset}.jsonl"
        write_dataset(source, subset, n_queries)
        two = n_queries in TWO_DESIGN_QUERIES and subset in SUBSETS[: len(TWO_DESIGN_QUERIES)]
        designs = [{"Nc": 10, "Np": 2}, {"Nc": 15, "Np": 5}] if two else [{"Nc": 15, "Np": 5}]
        datasets[subset] = {"layout": "generic", "path": str(source), "designs": designs, "seed": 0}
    embedders = {code: {"backend": "gt_minilm_l6"} for code in ["AML12v2", "E5Sv2", "ME5S", "MQML6Cv1"]}
    ranked_per_embedder = sum(
        q * len(d["designs"]) for q, d in zip(TWO_DESIGN_QUERIES + ONE_DESIGN_QUERIES, datasets.values(), strict=False)
    )
    assert sum(TWO_DESIGN_QUERIES + ONE_DESIGN_QUERIES) == 6112 and ranked_per_embedder == 10748
    # about 9,000 LLM calls per (dataset, embedder, design): 10 shards of ~900 calls each
    return {"datasets": datasets, "rankers": embedders, "K": [1, 2, 3, 4, 5, 6, 8, 10], "llm": {**LLM, "shards": 10}}


def small_config(folder: Path) -> dict:
    """The baseline: one dataset of 10 queries, one embedder."""
    source = folder / "small.jsonl"
    write_dataset(source, "S", 10)
    return {
        "datasets": {"small": {"layout": "generic", "path": str(source)}},
        "rankers": {"ML6": {"backend": "gt_minilm_l6"}},
        "llm": LLM,
    }


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def dry_run_rules(folder: Path, configfile: Path) -> tuple[float, float, dict[str, int]]:
    """Wall and CPU seconds (user + system) of ``snakemake -n --forceall`` in ``folder`` with
    ``configfile``, and its jobs by rule (``total`` included). The API keys the configs name are
    set to a placeholder when unset: a dry run sends nothing."""
    cmd = [str(SNAKEMAKE), "-n", "--forceall", "--snakefile", str(REPO / "Snakefile"), "--directory", str(folder),
           "--configfile", str(configfile), "--quiet", "rules"]
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "dry-run",
           "RR_LOOPBACK_KEY": os.environ.get("RR_LOOPBACK_KEY") or "dry-run"}
    start, cpu_start = time.perf_counter(), children_cpu_seconds()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds, cpu = time.perf_counter() - start, children_cpu_seconds() - cpu_start
    if proc.returncode != 0:
        sys.exit(f"dry run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    rules = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout + proc.stderr, re.MULTILINE))
    if "total" not in rules:
        sys.exit(f"no job count in the dry-run output:\n{proc.stdout[-3000:]}")
    return seconds, cpu, {rule: int(count) for rule, count in rules.items()}


def dry_run(folder: Path, config: dict) -> tuple[float, float, int]:
    """Wall and CPU seconds of ``snakemake -n`` on ``config`` (written to ``folder``) and its job count."""
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    seconds, cpu, rules = dry_run_rules(folder, folder / "config.yaml")
    return seconds, cpu, rules["total"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the results, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="the baseline only: checks that it runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as small_dir, tempfile.TemporaryDirectory() as big_dir:
        small_seconds, small_cpu, small_jobs = dry_run(Path(small_dir), small_config(Path(small_dir)))
        big_seconds, big_cpu, big_jobs = ((small_seconds, small_cpu, small_jobs) if args.smoke
                                          else dry_run(Path(big_dir), paper_scale_config(Path(big_dir))))
    print(f"baseline (1 dataset, 10 queries): dry_run_seconds={small_seconds:.2f} ({small_cpu:.2f} s CPU) "
          f"jobs={small_jobs}")
    print(f"paper scale / baseline: time ratio {big_seconds / small_seconds:.2f} (CPU {big_cpu / small_cpu:.2f}), "
          f"job ratio {big_jobs / small_jobs:.1f}")
    print(f"dry_run_seconds={big_seconds:.2f} dry_run_cpu_seconds={big_cpu:.2f} jobs={big_jobs}")
    if args.json:
        write_benchmark_json(args.json, {"dry_run_seconds": big_seconds, "dry_run_cpu_seconds": big_cpu,
                                         "jobs": big_jobs, "baseline_dry_run_seconds": small_seconds,
                                         "baseline_dry_run_cpu_seconds": small_cpu, "baseline_jobs": small_jobs})


if __name__ == "__main__":
    main()
