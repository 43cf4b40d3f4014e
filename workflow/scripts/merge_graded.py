"""Snakemake script: the graded shards of one design -> its graded file (Parquet and published JSON)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.graded import export_published_json
from retrieval_response.tables.sample_rules import validate_graded

log = job_log(snakemake.log[0])
graded = pl.concat([pl.read_parquet(path) for path in snakemake.input.shards]).sort("id", "K")
validate_graded(graded, snakemake.output.graded)
write_parquet(graded, snakemake.output.graded)
export_published_json(graded, snakemake.output.json)
log.info("%d graded samples from %d shards", graded.height, len(snakemake.input.shards))
