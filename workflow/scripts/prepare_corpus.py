"""Snakemake script: a beir or trec dataset's corpus file -> the corpus table (doc_id, text)."""

import _workflow_package  # noqa: F401

from retrieval_response.datasets.judged_corpus import corpus_table
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log

log = job_log(snakemake.log[0])
corpus = corpus_table(snakemake.params.layout, snakemake.input.source)
write_parquet(corpus, snakemake.output.corpus)
log.info("%s: %d corpus documents", snakemake.wildcards.dataset, corpus.height)
