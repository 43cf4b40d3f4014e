"""Job counts of the workflow on a cluster: Snakemake jobs, Slurm jobs and LLM jobs per config.

Dry runs (``snakemake -n --forceall --quiet rules``) of the smoke config (``.test/config_smoke.yaml``
in ``.test``), the default ``config.yaml`` and the paper-scale workload of ``benchmarks/dag.py``
count the jobs by rule. Slurm jobs = Snakemake jobs minus the jobs of local rules (``localrule:
True`` in the Snakefile and ``workflow/rules/``) minus the rank jobs, which run inside their
embedding's job (the profile's ``embed_rank`` group); LLM jobs = the jobs of :data:`LLM_RULES`.
docs/CLUSTER.md's table is the JSON this writes.
Run: ``python benchmarks/job_counts.py --json docs/cluster/job_counts.json`` (``--smoke``: the smoke
config only, to check that it runs)
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import yaml
from dag import REPO, dry_run_rules, paper_scale_config

from retrieval_response.reports.benchmark_record import write_benchmark_json

LLM_RULES = ("answer_ideal", "answer_topk", "grade", "judge_documents")
GROUPED_RULES = ("rank",)
"""Rules whose jobs run inside another rule's Slurm job (profiles/slurm: ``groups``)."""


def workflow_rules() -> dict[str, bool]:
    """{rule or checkpoint name: whether it is marked ``localrule: True``} of the Snakefile and
    ``workflow/rules/*.smk``."""
    rules: dict[str, bool] = {}
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]:
        rule = None
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"\s*(?:rule|checkpoint)\s+(\w+)\s*:", line)
            if match:
                rule = match.group(1)
                rules.setdefault(rule, False)
            if re.match(r"\s*localrule:\s*True", line) and rule:
                rules[rule] = True
    return rules


def local_rules() -> list[str]:
    """The rules marked ``localrule: True`` (:func:`workflow_rules`)."""
    return sorted(name for name, local in workflow_rules().items() if local)


def counts(jobs_by_rule: dict[str, int], local: list[str]) -> dict:
    """Snakemake, Slurm and LLM jobs of a dry run's ``jobs_by_rule`` (module docstring)."""
    total = jobs_by_rule["total"]
    off_cluster = sum(jobs_by_rule.get(rule, 0) for rule in [*local, *GROUPED_RULES])
    return {"snakemake_jobs": total, "slurm_jobs": total - off_cluster,
            "llm_jobs": sum(jobs_by_rule.get(rule, 0) for rule in LLM_RULES),
            "jobs_by_rule": {rule: n for rule, n in jobs_by_rule.items() if rule != "total"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the counts, with their provenance, to this JSON file")
    parser.add_argument("--smoke", action="store_true", help="the smoke config only: checks that it runs")
    args = parser.parse_args()
    local = local_rules()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "config.yaml").write_text(yaml.safe_dump(paper_scale_config(folder)))
        runs = {"smoke": (REPO / ".test", REPO / ".test/config_smoke.yaml"), "default": (REPO, REPO / "config.yaml"),
                "paper_scale": (folder, folder / "config.yaml")}
        if args.smoke:
            runs = {"smoke": runs["smoke"]}
        results = {name: counts(dry_run_rules(*run)[-1], local) for name, run in runs.items()}
    for name, result in results.items():
        print(f"{name}: snakemake_jobs={result['snakemake_jobs']} slurm_jobs={result['slurm_jobs']} "
              f"llm_jobs={result['llm_jobs']}")
    if args.json:
        write_benchmark_json(args.json, {"local_rules": local, **results})


if __name__ == "__main__":
    main()
