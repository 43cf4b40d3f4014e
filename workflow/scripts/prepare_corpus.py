"""Snakemake script: a corpus-level dataset's source (beir or trec qrels file, or ir_datasets id)
-> the corpus table (doc_id, text). An ir_datasets corpus downloads only when
``models.allow_downloads`` is true (read from the config, as prepare_dataset does)."""

import _workflow_package  # noqa: F401

from retrieval_response.datasets.layouts import corpus_table
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log

log = job_log(snakemake.log[0])
corpus = corpus_table(snakemake.params.layout, snakemake.params.source,
                      allow_downloads=snakemake.config["models"]["allow_downloads"])
write_parquet(corpus, snakemake.output.corpus)
log.info("%s: %d corpus documents", snakemake.wildcards.dataset, corpus.height)
