"""Snakemake script: analysis table -> correlations, differences and resampled correlations for one segmentation."""

import _workflow_package  # noqa: F401

from retrieval_response.analysis.correlation_tables import analysis_tables, write_analysis
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.replication.verdicts import replication_corr_type
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
corr_types = list(snakemake.params.corr_types)
correlations, differences, resamples = analysis_tables(
    read_analysis_table(snakemake.input.graded),
    segmentation=snakemake.wildcards.segmentation,
    alpha_grid=snakemake.params.alpha_grid,
    corr_types=corr_types,
    min_segment_samples=snakemake.params.min_segment_samples,
    finer_keys=tuple(snakemake.params.finer_keys),
    bootstrap_resamples=snakemake.params.bootstrap_resamples,
    seed=snakemake.params.seed,
    targets=list(snakemake.params.targets) if snakemake.params.targets else None,
    compat=snakemake.params.compat,
    resample_corr_types=[replication_corr_type(corr_types)],
)
write_analysis(correlations, differences, snakemake.output.correlations, snakemake.output.differences)
write_parquet(resamples, snakemake.output.resamples)
log.info("%d correlation rows, %d difference rows", correlations.height, differences.height)
