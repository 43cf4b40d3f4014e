"""Snakemake script: a corpus-level dataset's queries, corpus and one ranker -> each query's top
documents as candidates (texts table) and ranked samples, and a skip report."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.ranking.cosine_ranking import write_ranked
from retrieval_response.ranking.kinds import retrieve_from_corpus

log = job_log(snakemake.log[0])
ranker = snakemake.params.ranker
inputs = snakemake.input
queries = None
if ranker["kind"] == "run":
    from retrieval_response.datasets.layouts import query_ids

    queries = query_ids(ranker["layout"], ranker["source"], allow_downloads=snakemake.config["models"]["allow_downloads"])
candidates, ranked, report = retrieve_from_corpus(
    pl.read_parquet(inputs.texts),
    pl.read_parquet(inputs.corpus),
    ranker,
    ranker_code=snakemake.wildcards.ranker,
    Ks=snakemake.params.K,
    vectors=inputs.vectors if "vectors" in inputs.keys() else None,
    run_path=inputs.run if "run" in inputs.keys() else None,
    queries=queries,
)
write_parquet(candidates, snakemake.output.texts)
write_ranked(ranked, snakemake.output.ranked)
write_json(report.as_dict(), snakemake.output.report)
log.info("%d queries retrieved from the corpus, skipped: %s", report.ranked, report.skipped)
