"""Snakemake script: every traces dataset's texts, traces and UMBRELA labels -> the labelling sheet (CSV)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_text
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.labelling_sheet import labelling_sheet, sheet_pairs

log = job_log(snakemake.log[0])
pairs = pl.concat([sheet_pairs(name, pl.read_parquet(texts), pl.read_parquet(traces), pl.read_parquet(judgments))
                   for name, texts, traces, judgments in zip(snakemake.params.datasets, snakemake.input.texts,
                                                             snakemake.input.traces, snakemake.input.judgments,
                                                             strict=True)])
sheet = labelling_sheet(pairs, snakemake.params.pairs, snakemake.params.seed)
write_text(sheet.write_csv(), snakemake.output.sheet)
log.info("%d of %d (query, document) pairs on the labelling sheet, stratified by UMBRELA label and rank",
         sheet.height, pairs.height)
