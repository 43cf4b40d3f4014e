"""Snakemake script: every ranked file of one dataset, each with its texts table -> its document judgments."""

import time

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.accounting import CallStats
from retrieval_response.llm.document_judgments import (
    check_judgment_failures,
    judge_documents,
    judged_pairs,
    judgment_statuses,
    model_sections,
)
from retrieval_response.llm.jobs import client_from_config, job_summary
from retrieval_response.llm.prompts import ANSWER_FIELDS, UDCG_FIELDS, UMBRELA_FIELDS, load_prompt

FIELDS = {"erag": ANSWER_FIELDS, "udcg": UDCG_FIELDS, "umbrela": UMBRELA_FIELDS}

log = job_log(snakemake.log[0])
start = time.monotonic()
job = snakemake.wildcards.dataset
kinds = list(snakemake.params.kinds)
llm = snakemake.config["llm"]
stats = CallStats()
models = model_sections(llm, kinds)
clients = {kind: client_from_config(section, llm, snakemake.threads, "judge_documents", job, snakemake.log[0], stats)
           for kind, section in models.items()}
prompts = {kind: load_prompt(snakemake.params.prompts[kind], FIELDS[kind]) for kind in kinds}
pairs = judged_pairs([(pl.read_parquet(ranked), pl.read_parquet(texts))
                     for ranked, texts in zip(snakemake.input.ranked, snakemake.input.texts, strict=True)])
judgments = judge_documents(pairs, kinds, clients, prompts)
check_judgment_failures(judgments, models, clients, llm["max_failed_share"], log, job)
write_parquet(judgments, snakemake.output.judgments)
summary = job_summary(next(iter(clients.values())), "judge_documents", job, time.monotonic() - start,
                      judgment_statuses(judgments))
write_json({**summary, "model": {kind: client.model.model for kind, client in clients.items()},
            "pairs": pairs.height, "queries": pairs["id"].n_unique(), "kinds": kinds},
           snakemake.output.summary)
log.info("%s: %d pairs of %d queries, kinds %s, %d calls, %d cache hits", job, pairs.height,
         pairs["id"].n_unique(), kinds, summary["calls"], summary["cache_hits"])
