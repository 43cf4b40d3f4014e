"""Snakemake script: analysis and verdict tables -> one PNG per figure kind, plus figures.json / figures.html."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.figures.analysis_figures import render_figures
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
segmentations = snakemake.params.segmentations
manifest = render_figures(
    read_analysis_table(snakemake.input.graded),
    dict(zip(segmentations, map(pl.read_parquet, snakemake.input.correlations), strict=False)),
    dict(zip(segmentations, map(pl.read_parquet, snakemake.input.differences), strict=False)),
    dict(zip(snakemake.params.figure_segmentations, map(pl.read_parquet, snakemake.input.segments), strict=True)),
    snakemake.output[0],
    corr_types=list(snakemake.params.corr_types),
    min_segment_samples=snakemake.params.min_segment_samples,
    rankers=dict(snakemake.params.rankers),
    verdict=pl.read_parquet(snakemake.input.verdict),
    monitor=pl.read_parquet(snakemake.input.monitor) if "monitor" in snakemake.input.keys() else None,
    processes=snakemake.threads,
)
log.info("%d figures drawn (%s); %d items left out and %d combinations not run, listed in figures.json",
         len(manifest.drawn), ", ".join(d["file"] for d in manifest.drawn), len(manifest.left_out),
         len(manifest.not_run))
