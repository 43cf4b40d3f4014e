"""Snakemake script: the analysis table of traces and the verdict -> the monitor table, the recommended
measure and each target per system and period with intervals and flags (decide.monitor)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.decide.monitor import monitor_table
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
graded = read_analysis_table(snakemake.input.graded)
table = monitor_table(graded, pl.read_parquet(snakemake.input.verdict),
                      period=snakemake.params.period, resamples=snakemake.params.resamples, seed=snakemake.params.seed)
write_parquet(table, snakemake.output.table)
log.info("%d periods of %d systems monitored (monitor.period %s), %d flagged; %d of %d samples without a time "
         "left out", table["period"].n_unique(), table["E"].n_unique(), snakemake.params.period, int(table["flag"].sum()),
         int(graded["time"].is_null().sum()), graded.height)
