"""Snakemake script: published samples_graded.json (+ samples_ranked.json, samples_texts.json,
judgments) -> one analysis table."""

import _workflow_package  # noqa: F401

from retrieval_response.datasets import published_texts
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.collect import collect_published

log = job_log(snakemake.log[0])
texts = snakemake.input.texts
graded = collect_published(snakemake.input.graded, snakemake.input.ranked or None,
                           texts=(texts, published_texts.read(texts, None)[0]) if texts else None,
                           judgments_paths=snakemake.input.judgments, erag_metric=snakemake.params.erag_metric)
write_parquet(graded, snakemake.output.graded)
log.info("%d graded samples read from %s", graded.height, snakemake.input.graded)
