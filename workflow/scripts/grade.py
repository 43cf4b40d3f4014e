"""Snakemake script: top-K answers + ideal answers of one shard -> graded samples."""

import time

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.jobs import check_failures, client_from_config, job_summary
from retrieval_response.llm.pipeline import grade_answers
from retrieval_response.llm.prompts import GRADE_FIELDS, load_prompt
from retrieval_response.tables.graded import validate_graded
from retrieval_response.tables.workflow_tables import read_texts_table

log = job_log(snakemake.log[0])
start = time.monotonic()
job = "/".join(snakemake.wildcards[k] for k in ("dataset", "embedder", "design", "shard"))
client = client_from_config(snakemake.config["llm"]["grader"], snakemake.config["llm"], snakemake.threads,
                            "grade", job, snakemake.log[0])
graded = grade_answers(pl.read_parquet(snakemake.input.topk), pl.read_parquet(snakemake.input.ideal),
                       read_texts_table(snakemake.input.texts, ["id", "q"]), client,
                       load_prompt(snakemake.input.prompt, GRADE_FIELDS, needs_reask=True))
validate_graded(graded, snakemake.output.graded)
summary = job_summary(client, "grade", job, time.monotonic() - start, graded["status"])
log.info("%s: %d samples, by status %s", job, graded.height, summary["samples_by_status"])
check_failures("grade", job, graded["status"], snakemake.config["llm"]["grader"],
               snakemake.config["llm"]["max_failed_share"], log, client.failure_details)
write_parquet(graded, snakemake.output.graded)
write_json(summary, snakemake.output.summary)
