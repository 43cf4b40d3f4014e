"""Snakemake script: differences and K/Np correlations -> the paper's conclusions with verdicts."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.analysis.replication import replication, replication_corr_type
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log

log = job_log(snakemake.log[0])
differences = {
    segmentation: pl.read_parquet(path)
    for segmentation, path in zip(snakemake.params.segmentations, snakemake.input.differences, strict=True)
}
ratio = bool(snakemake.input.correlations_ratio)
table = replication(
    differences,
    pl.read_parquet(snakemake.input.correlations_ratio[0]) if ratio else None,
    pl.read_parquet(snakemake.input.resamples_ratio[0]) if ratio else None,
    corr_type=replication_corr_type(snakemake.params.corr_types),
)
write_parquet(table, snakemake.output.table)
log.info("replication: %d rows, %s", table.height, dict(table["verdict"].value_counts().iter_rows()))
