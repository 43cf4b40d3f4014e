"""The derived tables documentation pages quote (:data:`DERIVED`): figures computed by a stated
formula from committed files (run summaries, benchmarks, the schema's defaults, the findings
tables), each a function of the repository root. :mod:`.doc_pages` fills the pages with them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl

from retrieval_response.decide.summary import verdict_summary
from retrieval_response.infra.yaml_files import load_yaml
from retrieval_response.replication.verdicts import CONTRADICTED, INCONCLUSIVE, SUPPORTED

FINDINGS = Path("docs/findings")
"""The committed findings tables."""
SCHEMA = Path("workflow/schemas/config.schema.yaml")
RUN_SUMMARIES = {"avx512": Path("docs/default_run/run_summary.json"),
                 "avx2": Path("docs/default_run/run_summary_avx2.json")}
"""The committed summaries of the default run, by the instruction set of the CPU they ran on."""
LLM_ENGINES = {"avx512": Path("docs/benchmarks/llm_engines.json"), "avx2": Path("docs/benchmarks/llm_engines_avx2.json")}
"""The committed results of ``benchmarks/llm_engines.py``, by the instruction set of the CPU they ran on."""
LLM_STAGES = ("answer_ideal", "answer_topk", "grade")
TEXT_REPORTS = {"arxiv": Path("docs/findings/runs/part10/texts_arxiv.report.json")}
"""The prepare reports of study datasets (``results/texts/<dataset>.report.json`` of
``snakemake --configfile config/study.yaml results/texts/<dataset>.report.json``)."""
DEFAULT_RUN_VERDICT = Path("docs/default_run/verdict.parquet")
"""The default run's verdict table (``results/analysis/verdict.parquet`` of ``snakemake --cores 8``)."""
WALL_CLOCKS = {"install": Path("docs/install/wall_clock.json"), "default_run": Path("docs/default_run/wall_clock.json")}
"""What ``/usr/bin/time -f '{"command": "%C", "wall_seconds": %e}' -o <file>`` wrote for a fresh
clone's ``bash install.sh`` and, after it, its default run (``snakemake --cores 8``)."""
LLM_COSTS = {"paper": Path("docs/paper_scale/llm_cost_paper.json"), "smoke": Path("docs/paper_scale/llm_cost_smoke.json")}
"""The committed estimates of ``python -m retrieval_response.reports.llm_cost CONFIG --json PATH``
for ``config/paper.yaml`` and ``.test/config_smoke.yaml``."""
PAPER_CONFIG = Path("config/paper.yaml")
EXACTNESS = Path("docs/exactness.json")


def _read_json(root: Path, path: Path) -> dict:
    return json.loads((root / path).read_text(encoding="utf-8"))


def _schema_defaults(node: dict, prefix: str) -> dict[str, object]:
    defaults = {}
    for name, child in (node.get("properties") or {}).items():
        if "default" in child and not isinstance(child["default"], (dict, list)):
            defaults[prefix + name] = child["default"]
        defaults.update(_schema_defaults(child, f"{prefix}{name}."))
    return defaults


def config_defaults(root: Path) -> pl.DataFrame:
    """``key, default``: each scalar default of the config schema by its dotted key
    (``llm.pacing.jobs``; an LLM role's settings as ``model.<key>``), printed as the YAML scalar."""
    schema = load_yaml(root / SCHEMA)
    defaults = _schema_defaults(schema, "")
    for name, definition in schema.get("$defs", {}).items():
        defaults.update(_schema_defaults(definition, f"{name}."))
    return pl.DataFrame({"key": list(defaults),
                         "default": [value if isinstance(value, str) else json.dumps(value)
                                     for value in defaults.values()]})


def _run_figures(summary: dict) -> dict[str, object]:
    stages, total = summary["stages"], summary["total"]
    graded_of = sum(stages["grade"]["samples_by_status"].values())
    llm_seconds = sum(stages[stage]["seconds"] for stage in LLM_STAGES)
    requests_per_job = [job["requests"] for job in summary["jobs"]]
    return {"requests": total["requests"], "calls": total["calls"],
            "requests_per_job_low": min(requests_per_job), "requests_per_job_high": max(requests_per_job),
            "graded": stages["grade"]["samples_by_status"].get("graded", 0), "graded_of": graded_of,
            **{f"{stage}_seconds": stages[stage]["seconds"] for stage in LLM_STAGES},
            **{f"{stage}_seconds_per_call": stages[stage]["seconds"] / stages[stage]["calls"] for stage in LLM_STAGES},
            "llm_seconds": llm_seconds, "llm_seconds_per_graded_sample": llm_seconds / graded_of,
            "embed_seconds": summary["stage_times"]["embed"]["seconds"],
            "evaluated_prompt_tokens": total["prompt_tokens"] - total["cached_prompt_tokens"],
            "cached_prompt_tokens": total["cached_prompt_tokens"],
            "completion_tokens": total["completion_tokens"],
            "prompt_tokens_per_completion_token":
                (total["prompt_tokens"] - total["cached_prompt_tokens"]) / total["completion_tokens"]}


def default_run(root: Path) -> pl.DataFrame:
    """One row per committed default-run summary (:data:`RUN_SUMMARIES`, column ``run``): its LLM
    requests and calls (and the fewest and most requests of one LLM job, ``requests_per_job_low``
    and ``_high``), graded samples (``graded`` of ``graded_of``), LLM seconds per stage
    (``<stage>_seconds``, sums over jobs; ``<stage>_seconds_per_call`` over the calls that reached
    the model) and ``llm_seconds`` = their sum,
    ``llm_seconds_per_graded_sample`` = llm_seconds / graded_of, ``embed_seconds``, and the tokens
    the model evaluated (prompt minus cached), took from its prompt cache and generated."""
    return pl.from_dicts([{"run": run, **_run_figures(_read_json(root, path))}
                          for run, path in RUN_SUMMARIES.items()])


def text_reports(root: Path) -> pl.DataFrame:
    """``dataset, read, sampled, words_before, words_after``: per report of :data:`TEXT_REPORTS`, the
    queries read and sampled, and the mean words of a candidate text before and after ``text_words``
    (``text_budget.words_before`` and ``words_after`` / ``text_budget.texts``)."""
    rows = []
    for dataset, path in TEXT_REPORTS.items():
        report = _read_json(root, path)
        budget = report["text_budget"]
        rows.append({"dataset": dataset, "read": report["read"], "sampled": report["sampled"],
                     "words_before": budget["words_before"] / budget["texts"],
                     "words_after": budget["words_after"] / budget["texts"]})
    return pl.from_dicts(rows)


def wall_clock(root: Path) -> pl.DataFrame:
    """``run, command, seconds, minutes``: one row per record of :data:`WALL_CLOCKS`; minutes = seconds / 60."""
    records = {run: _read_json(root, path) for run, path in WALL_CLOCKS.items()}
    return pl.from_dicts([{"run": run, "command": record["command"], "seconds": record["wall_seconds"],
                           "minutes": record["wall_seconds"] / 60} for run, record in records.items()])


def default_run_llm_time(root: Path) -> pl.DataFrame:
    """``machine, repacked, seconds``: the LLM time the default run's tokens (AVX-512 summary) take
    at the token rates that ``benchmarks/llm_engines.py`` measured on each CPU kind
    (:data:`LLM_ENGINES`) for llama-server with and without weight repacking: evaluated prompt
    tokens / prompt rate + generated tokens / decode rate."""
    run = _run_figures(_read_json(root, RUN_SUMMARIES["avx512"]))
    rows = []
    for machine, path in LLM_ENGINES.items():
        results = _read_json(root, path)["results"]
        for repacked, engine in ((False, "server"), (True, "server_repacked")):
            rates = results[engine]
            rows.append({"machine": machine, "repacked": repacked,
                         "seconds": run["evaluated_prompt_tokens"] / rates["prompt_tokens_per_second"]
                         + run["completion_tokens"] / rates["decode_tokens_per_second"]})
    return pl.from_dicts(rows)


def default_run_judgments(root: Path) -> pl.DataFrame:
    """One row: the document judgments the default run (``config.yaml``) would make with all three
    kinds on. ``pairs`` = sum over its datasets of queries x the largest Nc of their designs (every
    candidate can reach a top-K: an upper bound), ``requests`` = 3 x pairs, and ``minutes`` = pairs
    x (a top-K answer's LLM seconds per call, for ``erag``, + 2 x a grade's, for the short replies
    of ``udcg`` and ``umbrela``) / 60 at the AVX-512 default run's rates: an estimate, not a measurement."""
    config = load_yaml(root / "config.yaml")
    pairs = sum(dataset["queries"] * max(design["Nc"] for design in dataset["designs"])
                for dataset in config["datasets"].values())
    run = _run_figures(_read_json(root, RUN_SUMMARIES["avx512"]))
    seconds = pairs * (run["answer_topk_seconds_per_call"] + 2 * run["grade_seconds_per_call"])
    return pl.DataFrame({"pairs": [pairs], "requests": [3 * pairs], "minutes": [seconds / 60]})


def requirements(root: Path) -> pl.DataFrame:
    """``file, packages``: each ``requirements*.txt`` of ``root`` with its count of requirement lines
    (neither blank nor a comment)."""
    files = sorted(root.glob("requirements*.txt"))
    counts = [sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
                  and not line.lstrip().startswith("#")) for path in files]
    return pl.DataFrame({"file": [path.name for path in files], "packages": counts})


def llm_cost_figures(root: Path) -> pl.DataFrame:
    """``config, stage, calls, prompt_tokens_millions, completion_tokens_millions, tokens_millions``
    of each estimate of :data:`LLM_COSTS`: one row per stage it has and ``total``, plus
    ``answers_and_grades`` (ideal and top-K answers and grades) and ``judgments`` (the judgment
    kinds together)."""
    rows = []
    for config, path in LLM_COSTS.items():
        results = _read_json(root, path)["results"]
        stages = {**results["stages"], "total": results["total"]}
        groups = {"answers_and_grades": ("ideal", "topk", "grade"),
                  "judgments": tuple(name for name in results["stages"] if name not in ("ideal", "topk", "grade"))}
        for group, names in groups.items():
            stages[group] = {key: sum(results["stages"][name][key] for name in names)
                             for key in ("calls", "prompt_tokens", "completion_tokens")}
        for stage, figures in stages.items():
            rows.append({"config": config, "stage": stage, "calls": figures["calls"],
                         "prompt_tokens_millions": figures["prompt_tokens"] / 1e6,
                         "completion_tokens_millions": figures["completion_tokens"] / 1e6,
                         "tokens_millions": (figures["prompt_tokens"] + figures["completion_tokens"]) / 1e6})
    return pl.from_dicts(rows)


def paper_jobs(root: Path) -> pl.DataFrame:
    """One row on ``config/paper.yaml`` and its cost estimate: ``rankings`` = ideal answers (one per
    query and design's Np) x rankers; ``llm_jobs`` = datasets x rankers x designs x 2 (the
    top-K answer and grade jobs without shards) and ``calls_per_job`` = their calls / llm_jobs;
    ``sharded_jobs`` = llm_jobs x ``llm.shards`` and ``calls_per_sharded_job`` likewise."""
    config = load_yaml(root / PAPER_CONFIG)
    stages = _read_json(root, LLM_COSTS["paper"])["results"]["stages"]
    rankers = len(config["rankers"])
    jobs = len(config["datasets"]) * rankers * len(config["designs"]) * 2
    calls = stages["topk"]["calls"] + stages["grade"]["calls"]
    shards = config["llm"]["shards"]
    return pl.DataFrame({"rankings": [stages["ideal"]["calls"] * rankers], "llm_jobs": [jobs],
                         "calls_per_job": [calls / jobs], "sharded_jobs": [jobs * shards],
                         "calls_per_sharded_job": [calls / (jobs * shards)]})


def exactness_compared(root: Path) -> pl.DataFrame:
    """``mode, fewest, most``: the fewest and the most defined values compared per row of
    ``docs/exactness.json`` (``python benchmarks/exactness.py --json docs/exactness.json``), per mode."""
    rows = pl.from_dicts(_read_json(root, EXACTNESS))
    return rows.group_by("mode", maintain_order=True).agg(fewest=pl.col("compared").min(),
                                                          most=pl.col("compared").max())


def findings_verdict(root: Path) -> pl.DataFrame:
    """``docs/findings/verdict.parquet`` family by family in words
    (:func:`~retrieval_response.decide.summary.verdict_summary`)."""
    return verdict_summary(pl.read_parquet(root / FINDINGS / "verdict.parquet"))


def default_run_verdict(root: Path) -> pl.DataFrame:
    """The default run's verdict (:data:`DEFAULT_RUN_VERDICT`) family by family in words
    (:func:`~retrieval_response.decide.summary.verdict_summary`)."""
    return verdict_summary(pl.read_parquet(root / DEFAULT_RUN_VERDICT))


def verdict_counts(root: Path) -> pl.DataFrame:
    """``method, families, families_with_worse, worse``: the families of the findings' verdict,
    those with a measure decided ``worse`` and the ``worse`` rows, for multiple comparisons with
    the best (``mcb``: ``docs/findings/verdict.parquet``) and for the all-pairs verdict it replaced
    (``all_pairs``: ``docs/findings/verdict_all_pairs.parquet``, the previous rebuild of the same
    samples, kept unchanged)."""
    rows = []
    for method, name in (("mcb", "verdict"), ("all_pairs", "verdict_all_pairs")):
        table = pl.read_parquet(root / FINDINGS / f"{name}.parquet")
        families = table.group_by("target", "subset", "E", "segment").agg((pl.col("decision") == "worse").any())
        rows.append({"method": method, "families": families.height,
                     "families_with_worse": int(families["decision"].sum()),
                     "worse": int((table["decision"] == "worse").sum())})
    return pl.DataFrame(rows)


def replication_counts(root: Path) -> pl.DataFrame:
    """Cells of ``docs/findings/replication.parquet`` by (``verdict``, ``verdict_adjusted``): ``n``,
    every pair of the two vocabularies present (0 where no cell has it)."""
    table = pl.read_parquet(root / FINDINGS / "replication.parquet")
    verdicts = pl.DataFrame({"verdict": [SUPPORTED, CONTRADICTED, INCONCLUSIVE]})
    pairs = verdicts.join(verdicts.rename({"verdict": "verdict_adjusted"}), how="cross")
    counts = table.group_by("verdict", "verdict_adjusted").agg(n=pl.len().cast(pl.Int64))
    return pairs.join(counts, on=["verdict", "verdict_adjusted"], how="left").with_columns(pl.col("n").fill_null(0))


DERIVED: dict[str, Callable[[Path], pl.DataFrame]] = {
    "config_defaults": config_defaults, "default_run": default_run, "default_run_llm_time": default_run_llm_time,
    "wall_clock": wall_clock, "text_reports": text_reports,
    "default_run_judgments": default_run_judgments, "requirements": requirements,
    "llm_cost_figures": llm_cost_figures, "paper_jobs": paper_jobs, "exactness_compared": exactness_compared,
    "findings_verdict": findings_verdict, "default_run_verdict": default_run_verdict,
    "verdict_counts": verdict_counts, "replication_counts": replication_counts}
"""Derived tables by name: each a function of the repository root (its docstring states the formula)."""
