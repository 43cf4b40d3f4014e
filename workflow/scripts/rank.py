"""Snakemake script: texts + a ranker -> ranked samples of one (Nc, Np) design, and a skip report.

The ranker is dense, lexical or the dataset's run file (``ranking.kinds``: one entry per kind)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.ranking.cosine_ranking import write_ranked
from retrieval_response.ranking.kinds import rank_pools

log = job_log(snakemake.log[0])
design = snakemake.params.design
ranked, report = rank_pools(
    pl.read_parquet(snakemake.input.texts), snakemake.params.ranker,
    {name: snakemake.input[name] for name in snakemake.input.keys()},
    allow_downloads=snakemake.config["models"]["allow_downloads"], ranker_code=snakemake.wildcards.ranker,
    Nc=design["Nc"], Np=design["Np"], Ks=design["K"],
)
write_ranked(ranked, snakemake.output.ranked)
write_json(report.as_dict(), snakemake.output.report)
log.info("%d queries ranked, skipped: %s", report.ranked, report.skipped)
