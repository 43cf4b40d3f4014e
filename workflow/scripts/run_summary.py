"""Snakemake script: LLM summary + job benchmarks -> the run summary (provenance, calls, tokens, time per stage)."""

import json

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.reports.provenance import provenance
from retrieval_response.reports.stage_times import stage_times

log = job_log(snakemake.log[0])
llm = json.loads(open(snakemake.input.llm, encoding="utf-8").read())
times = stage_times(snakemake.input.benchmarks, "results/benchmarks")
write_json({"provenance": provenance(snakemake.params.models), "stage_times": times, **llm}, snakemake.output.summary)
log.info("time per stage: %s", {stage: row["seconds"] for stage, row in times.items()})
