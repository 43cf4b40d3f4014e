"""Snakemake script: the LLM job summaries and the call journal -> one LLM summary (totals and per
stage; calls, tokens and cost from the journal, so calls of killed jobs count too)."""

import json

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.llm.accounting import JOURNAL_DIR, merge_summaries, read_journal

log = job_log(snakemake.log[0])
summaries = [json.loads(open(path, encoding="utf-8").read()) for path in snakemake.input.summaries]
run = merge_summaries(summaries, read_journal(JOURNAL_DIR))
write_json({**run, "jobs": summaries}, snakemake.output.summary)
log.info("LLM summary: %s", {k: v for k, v in run["total"].items() if not isinstance(v, dict)})
