"""Snakemake script: texts + a ranker -> ranked samples of one (Nc, Np) design, and a skip report.

The ranker is a dense embedder (the embed rule's vectors, cosine), a lexical one (BM25 over the
dataset's texts) or the dataset's run file (its order, checked against the corpus)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.ranking.cosine_ranking import rank_samples, write_ranked

log = job_log(snakemake.log[0])
design = snakemake.params.design
ranker = snakemake.params.ranker
texts = pl.read_parquet(snakemake.input.texts)
common = dict(embedder_code=snakemake.wildcards.embedder, Nc=design["Nc"], Np=design["Np"], Ks=design["K"])
if ranker["kind"] == "run":
    from retrieval_response.datasets.layouts import corpus_ids
    from retrieval_response.ranking.run_file import rank_from_run

    documents, queries = corpus_ids(ranker["layout"], ranker["source"],
                                    allow_downloads=snakemake.config["models"]["allow_downloads"])
    ranked, report = rank_from_run(texts, snakemake.input.run, documents=documents, queries=queries, **common)
elif ranker["kind"] == "lexical":
    from retrieval_response.ranking.lexical import bm25_rank_samples

    ranked, report = bm25_rank_samples(texts, ranker["spec"], source=str(ranker["source"]), **common)
else:
    from retrieval_response.embedding.dataset import vector_lookup

    ranked, report = rank_samples(texts, vector_lookup(pl.read_parquet(snakemake.input.vectors)), **common)
write_ranked(ranked, snakemake.output.ranked)
write_json(report.as_dict(), snakemake.output.report)
log.info("%d queries ranked, skipped: %s", report.ranked, report.skipped)
