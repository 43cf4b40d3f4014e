"""Snakemake script: texts + vectors -> ranked samples of one (Nc, Np) design, and a skip report."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.embedding.dataset import vector_lookup
from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.ranking.cosine_ranking import rank_samples, write_ranked

log = job_log(snakemake.log[0])
design = snakemake.params.design
ranked, report = rank_samples(
    pl.read_parquet(snakemake.input.texts),
    vector_lookup(pl.read_parquet(snakemake.input.vectors)),
    embedder_code=snakemake.wildcards.embedder,
    Nc=design["Nc"],
    Np=design["Np"],
    Ks=design["K"],
)
write_ranked(ranked, snakemake.output.ranked)
write_json(report.as_dict(), snakemake.output.report)
log.info("%d queries ranked, skipped: %s", report.ranked, report.skipped)
