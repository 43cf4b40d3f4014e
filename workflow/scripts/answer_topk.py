"""Snakemake script: ranked samples -> one answer per (id, E, Nc, Np, K) from the top-K texts."""

import time

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.jobs import check_failures, client_from_config, job_summary
from retrieval_response.llm.pipeline import topk_answers
from retrieval_response.llm.prompts import ANSWER_FIELDS, load_prompt
from retrieval_response.llm.sharding import select_shard
from retrieval_response.tables.workflow_tables import check_candidates, read_ranked_table, read_texts_table

log = job_log(snakemake.log[0])
start = time.monotonic()
texts = read_texts_table(snakemake.input.texts)
ranked = select_shard(read_ranked_table(snakemake.input.ranked), snakemake.wildcards.shard)
check_candidates(ranked, texts, snakemake.input.ranked, snakemake.input.texts)
job = "/".join(snakemake.wildcards[k] for k in ("dataset", "ranker", "design", "shard"))
client = client_from_config(snakemake.config["llm"]["generator"], snakemake.config["llm"], snakemake.threads,
                            "answer_topk", job, snakemake.log[0])
answers = topk_answers(ranked, texts, client, load_prompt(snakemake.input.prompt, ANSWER_FIELDS))
summary = job_summary(client, "answer_topk", job, time.monotonic() - start, answers["status"])
log.info("%s: %d top-K answers, %d calls, %d cache hits", job, answers.height, summary["calls"], summary["cache_hits"])
check_failures("answer_topk", job, answers["status"], snakemake.config["llm"]["generator"],
               snakemake.config["llm"]["max_failed_share"], log, client.failure_details)
write_parquet(answers, snakemake.output.answers)
write_json(summary, snakemake.output.summary)
