"""Snakemake script: analysis table and the verdict's segments tables -> the verdict table, the
verdict in words and its headline as reStructuredText."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.analysis.segments import VERDICT_SEGMENTATIONS
from retrieval_response.decide.summary import verdict_rst, write_verdict_text
from retrieval_response.decide.verdict import verdict_table
from retrieval_response.infra.atomic import write_parquet, write_text
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
verdict = verdict_table(
    read_analysis_table(snakemake.input.graded),
    alpha_grid=snakemake.params.alpha_grid,
    segments=dict(zip(VERDICT_SEGMENTATIONS, map(pl.read_parquet, snakemake.input.segments), strict=True)),
    bootstrap_resamples=snakemake.params.bootstrap_resamples,
    seed=snakemake.params.seed,
    targets=list(snakemake.params.targets) if snakemake.params.targets else None,
    corr_type=snakemake.params.corr_type,
    compat=snakemake.params.compat,
)
write_parquet(verdict, snakemake.output.table)
write_verdict_text(verdict, snakemake.output.text)
write_text(verdict_rst(verdict), snakemake.output.rst)
log.info("%d verdict rows: %s", verdict.height,
         ", ".join(f"{d} {n}" for d, n in verdict["decision"].value_counts(sort=True).iter_rows()))
