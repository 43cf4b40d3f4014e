"""Snakemake script: query texts -> one ideal answer per (id, Np) from all Np positives (a
corpus-level dataset: one per query, from all its judged positives)."""

import time

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.jobs import check_failures, client_from_config, job_summary
from retrieval_response.llm.pipeline import ideal_answers
from retrieval_response.llm.prompts import ANSWER_FIELDS, load_prompt
from retrieval_response.tables.workflow_tables import read_texts_table
from retrieval_response.workflow_config.llm_requests import corpus_ideal_answer_requests, ideal_answer_requests

log = job_log(snakemake.log[0])
start = time.monotonic()
job = snakemake.wildcards.dataset
client = client_from_config(snakemake.config["llm"]["generator"], snakemake.config["llm"], snakemake.threads,
                            "answer_ideal", job, snakemake.log[0])
texts = read_texts_table(snakemake.input.texts, ["id", "q", "p"])
prompt = load_prompt(snakemake.input.prompt, ANSWER_FIELDS)
if snakemake.params.corpus_level:
    requests = corpus_ideal_answer_requests(texts)
else:
    requests = ideal_answer_requests(texts, snakemake.params.nps)
answers = ideal_answers(requests, client, prompt)
summary = job_summary(client, "answer_ideal", job, time.monotonic() - start, answers["status"])
log.info("%s: %d ideal answers, %d calls, %d cache hits", job, answers.height,
         summary["calls"], summary["cache_hits"])
check_failures("answer_ideal", job, answers["status"], snakemake.config["llm"]["generator"],
               snakemake.config["llm"]["max_failed_share"], log, client.failure_details)
write_parquet(answers, snakemake.output.answers)
write_json(summary, snakemake.output.summary)
