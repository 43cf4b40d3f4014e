"""Snakemake script: texts + a ranker -> ranked samples of one (Nc, Np) design, and a skip report.

The ranker is dense, lexical or the dataset's run file (``ranking.kinds``: one entry per kind)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.ranking.cosine_ranking import write_ranked
from retrieval_response.ranking.kinds import rank_pools

log = job_log(snakemake.log[0])
design, ranker = snakemake.params.design, snakemake.params.ranker


def source_ids():
    """The document and query ids of the dataset's source, which a run's ids must name."""
    from retrieval_response.datasets.layouts import corpus_ids

    return corpus_ids(ranker["layout"], ranker["source"], allow_downloads=snakemake.config["models"]["allow_downloads"])


ranked, report = rank_pools(
    pl.read_parquet(snakemake.input.texts), ranker, {name: snakemake.input[name] for name in snakemake.input.keys()},
    source_ids=source_ids, ranker_code=snakemake.wildcards.ranker, Nc=design["Nc"], Np=design["Np"], Ks=design["K"],
)
write_ranked(ranked, snakemake.output.ranked)
write_json(report.as_dict(), snakemake.output.report)
log.info("%d queries ranked, skipped: %s", report.ranked, report.skipped)
