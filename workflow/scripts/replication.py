"""Snakemake script: differences, K/Np correlations, the analysis table and its segments tables -> the
paper's conclusions with verdicts, plain and family-wise adjusted (without finer keys)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.analysis.samples import resolve_targets
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.replication.verdicts import adjusted_claims, replication, replication_corr_type
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
differences = {
    segmentation: pl.read_parquet(path)
    for segmentation, path in zip(snakemake.params.segmentations, snakemake.input.differences, strict=True)
}
ratio = bool(snakemake.input.correlations_ratio)
corr_type = replication_corr_type(snakemake.params.corr_types)
adjusted = None
if not snakemake.params.finer_keys:
    graded = read_analysis_table(snakemake.input.graded)
    targets = list(snakemake.params.targets) if snakemake.params.targets else None
    segments = {
        segmentation: pl.read_parquet(path)
        for segmentation, path in zip(snakemake.params.segmentations, snakemake.input.segments, strict=True)
    }
    adjusted = adjusted_claims(
        graded,
        segments,
        resolve_targets(graded, targets),
        alpha_grid=snakemake.params.alpha_grid,
        bootstrap_resamples=snakemake.params.bootstrap_resamples,
        seed=snakemake.params.seed,
        corr_type=corr_type,
        compat=snakemake.params.compat,
    )
table = replication(
    differences,
    pl.read_parquet(snakemake.input.correlations_ratio[0]) if ratio else None,
    pl.read_parquet(snakemake.input.resamples_ratio[0]) if ratio else None,
    corr_type=corr_type,
    adjusted=adjusted,
)
write_parquet(table, snakemake.output.table)
log.info("replication: %d rows, %s; adjusted: %s", table.height, dict(table["verdict"].value_counts().iter_rows()),
         dict(table["verdict_adjusted"].value_counts().iter_rows()))
