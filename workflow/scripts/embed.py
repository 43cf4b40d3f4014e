"""Snakemake script: one dataset's texts (and corpus, for corpus-level retrieval) -> their vectors for
one embedder (via the shared store)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.embedding import EmbeddingStore, hub_models, make_embedder
from retrieval_response.embedding.dataset import embed_corpus_dataset, embed_dataset
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log

log = job_log(snakemake.log[0])
log.info("%s", hub_models.describe())
store = EmbeddingStore(snakemake.params.store)
embedder = make_embedder(snakemake.wildcards.ranker, snakemake.params.spec, threads=snakemake.threads)
texts = pl.read_parquet(snakemake.input.texts)
if "corpus" in snakemake.input.keys():
    vectors = embed_corpus_dataset(texts, pl.read_parquet(snakemake.input.corpus), embedder, store)
else:
    vectors = embed_dataset(texts, [tuple(d) for d in snakemake.params.designs], embedder, store)
write_parquet(vectors, snakemake.output.vectors)
counters = store.counters
log.info("%d texts requested, %d encoded in %d encoder calls", counters.texts_requested, counters.texts_encoded,
         counters.encoder_calls)
