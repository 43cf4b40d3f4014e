"""Snakemake script: every dataset's judgments and texts -> UMBRELA's agreement with the qrels."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.analysis.umbrela_qrels_agreement import umbrela_agreement
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log

log = job_log(snakemake.log[0])
tables = [(pl.read_parquet(j), pl.read_parquet(t, columns=["id", "p", "n"]))
          for j, t in zip(snakemake.input.judgments, snakemake.input.texts, strict=True)]
table = umbrela_agreement(tables, snakemake.params.resamples, snakemake.params.seed)
write_parquet(table, snakemake.output.table)
log.info("UMBRELA vs qrels: %s", table.filter(pl.col("subset") == "all").row(0, named=True))
