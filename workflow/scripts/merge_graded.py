"""Snakemake script: the graded shards of one design -> its graded file (Parquet and published JSON)."""

import polars as pl

from retrieval_response.atomic import write_parquet
from retrieval_response.graded import export_published_json, validate_graded
from retrieval_response.logs import job_log

log = job_log(snakemake.log[0])
graded = pl.concat([pl.read_parquet(path) for path in snakemake.input.shards]).sort("id", "K")
validate_graded(graded, snakemake.output.graded)
write_parquet(graded, snakemake.output.graded)
export_published_json(graded, snakemake.output.json)
log.info("%d graded samples from %d shards", graded.height, len(snakemake.input.shards))
