"""Snakemake script: analysis tables -> the paper's heatmaps (PNG) in one folder."""

import polars as pl

from retrieval_response.figures import render_figures
from retrieval_response.logs import job_log

log = job_log(snakemake.log[0])
segmentations = snakemake.params.segmentations
written = render_figures(
    pl.read_parquet(snakemake.input.graded),
    dict(zip(segmentations, map(pl.read_parquet, snakemake.input.correlations))),
    dict(zip(segmentations, map(pl.read_parquet, snakemake.input.differences))),
    snakemake.output[0],
    corr_types=list(snakemake.params.corr_types),
    min_segment_samples=snakemake.params.min_segment_samples,
)
log.info("%d figures written", len(written))
