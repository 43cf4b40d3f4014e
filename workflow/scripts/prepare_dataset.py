"""Snakemake script: source file (or ir_datasets id) -> query-texts samples + skip report (a
corpus-level dataset: its queries with a judged positive).

An ir_datasets dataset downloads into the package's cache only when ``models.allow_downloads`` is
true; the permission is read from the config, not a param, so that changing it reruns nothing."""

import logging

import _workflow_package  # noqa: F401

from retrieval_response.datasets import prepare
from retrieval_response.datasets.arxiv_words import split_joined_words_table
from retrieval_response.datasets.layouts import prepare_judged_queries
from retrieval_response.datasets.sampling import skip_summary
from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log, tell

log = job_log(snakemake.log[0])
if snakemake.params.corpus_level:
    texts, report = prepare_judged_queries(snakemake.params.layout, snakemake.params.source,
                                           n_queries=snakemake.params.queries, seed=snakemake.params.seed,
                                           subset=snakemake.params.subset,
                                           allow_downloads=snakemake.config["models"]["allow_downloads"])
else:
    texts, report = prepare(
        snakemake.params.layout,
        snakemake.params.source,
        level=snakemake.params.level,
        subset=snakemake.params.subset,
        n_queries=snakemake.params.queries,
        seed=snakemake.params.seed,
        designs=[tuple(d) for d in snakemake.params.designs],
        text_words=snakemake.params.text_words,
        # the arXiv layouts' line-break repair (datasets.<name>.split_joined_words, checked at start-up)
        repair_texts=split_joined_words_table if snakemake.params.split_joined_words else None,
        allow_downloads=snakemake.config["models"]["allow_downloads"],
    )
write_parquet(texts, snakemake.output.texts)
write_json(report, snakemake.output.report)
log.info("%s: %d queries written", snakemake.wildcards.dataset, texts.height)
# What each design skips goes to the terminal, not only to the report file.
line, loses = skip_summary(snakemake.wildcards.dataset, report)
tell(log, logging.WARNING if loses else logging.INFO, line)
