"""Snakemake script: a dataset's traces -> the grades of each trace's own answer (no ideal answer)."""

import time

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.jobs import check_failures, client_from_config, job_summary
from retrieval_response.llm.pipeline import grade_traces
from retrieval_response.llm.prompts import GRADE_CONTEXT_FIELDS, GRADE_GOLD_FIELDS, load_prompt

FIELDS = {"context": GRADE_CONTEXT_FIELDS, "gold": GRADE_GOLD_FIELDS}

log = job_log(snakemake.log[0])
start = time.monotonic()
job = snakemake.wildcards.dataset
llm = snakemake.config["llm"]
client = client_from_config(llm["grader"], llm, snakemake.threads, "grade_traces", job, snakemake.log[0])
prompts = {prefix: load_prompt(path, FIELDS[prefix], needs_reask=True)
           for prefix, path in zip(snakemake.params.references, snakemake.input.prompts, strict=True)}
grades = grade_traces(pl.read_parquet(snakemake.input.traces), pl.read_parquet(snakemake.input.texts), client,
                      context_prompt=prompts.get("context"), gold_prompt=prompts.get("gold"))
statuses = pl.concat([grades[f"status_{prefix}"] for prefix in prompts])
summary = job_summary(client, "grade_traces", job, time.monotonic() - start, statuses)
log.info("%s: %d traces graded against %s, by status %s", job, grades.height, ", ".join(prompts),
         summary["samples_by_status"])
check_failures("grade_traces", job, statuses, llm["grader"], llm["max_failed_share"], log, client.failure_details)
write_parquet(grades, snakemake.output.grades)
write_json(summary, snakemake.output.summary)
