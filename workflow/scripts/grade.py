"""Snakemake script: top-K answers + ideal answers of one shard -> graded samples."""

import time

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.jobs import check_failures, client_from_config, job_summary
from retrieval_response.llm.pipeline import grade_answers
from retrieval_response.llm.prompts import GRADE_FIELDS, GRADE_GOLD_FIELDS, load_prompt
from retrieval_response.tables.sample_rules import validate_graded
from retrieval_response.tables.workflow_tables import gold_answers, read_texts_table

log = job_log(snakemake.log[0])
start = time.monotonic()
job = "/".join(snakemake.wildcards[k] for k in ("dataset", "ranker", "design", "shard"))
client = client_from_config(snakemake.config["llm"]["grader"], snakemake.config["llm"], snakemake.threads,
                            "grade", job, snakemake.log[0])
gold_prompt = (load_prompt(snakemake.input.prompt_gold, GRADE_GOLD_FIELDS, needs_reask=True)
               if snakemake.input.prompt_gold else None)
texts = read_texts_table(snakemake.input.texts, ["id", "q"])
if gold_prompt is not None:
    texts = texts.join(gold_answers(snakemake.input.texts), on="id", how="left")
graded = grade_answers(pl.read_parquet(snakemake.input.topk), pl.read_parquet(snakemake.input.ideal), texts, client,
                       load_prompt(snakemake.input.prompt, GRADE_FIELDS, needs_reask=True), gold_prompt)
validate_graded(graded, snakemake.output.graded)
summary = job_summary(client, "grade", job, time.monotonic() - start, graded["status"])
requests = graded["status"]
if gold_prompt is not None:
    summary["samples_by_gold_status"] = dict(sorted(graded["status_gold"].value_counts().iter_rows()))
    requests = pl.concat([requests, graded["status_gold"]])
log.info("%s: %d samples, by status %s%s", job, graded.height, summary["samples_by_status"],
         f", by gold status {summary['samples_by_gold_status']}" if gold_prompt is not None else "")
check_failures("grade", job, requests, snakemake.config["llm"]["grader"],
               snakemake.config["llm"]["max_failed_share"], log, client.failure_details)
write_parquet(graded, snakemake.output.graded)
write_json(summary, snakemake.output.summary)
