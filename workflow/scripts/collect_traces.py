"""Snakemake script: every traces dataset's traces, texts, grades (and judgments) -> the analysis table
and the traces report (samples left out, measures not computable, UMBRELA against the qrels)."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.collect import check_unique_samples
from retrieval_response.tables.trace_samples import collect_traces, traces_report

log = job_log(snakemake.log[0])
judgments = list(snakemake.input.judgments) or [None] * len(snakemake.params.datasets)
tables, reports = [], {}
for name, texts_path, traces_path, grades_path, judgments_path, relevance in zip(
        snakemake.params.datasets, snakemake.input.texts, snakemake.input.traces, snakemake.input.grades, judgments,
        snakemake.params.relevance, strict=True):
    texts = pl.read_parquet(texts_path)
    judged = pl.read_parquet(judgments_path) if judgments_path else None
    table, report = collect_traces(pl.read_parquet(traces_path), texts, pl.read_parquet(grades_path), judged,
                                   relevance=relevance, erag_metric=snakemake.params.erag_metric,
                                   resamples=snakemake.params.resamples, seed=snakemake.params.seed)
    tables.append(table)
    reports[name] = report
graded = pl.concat(tables, how="diagonal_relaxed")
check_unique_samples(graded, snakemake.input.traces)
write_parquet(graded, snakemake.output.graded)
write_json(traces_report(graded, reports), snakemake.output.report)
log.info("%d trace samples of %d systems collected", graded.height, graded["E"].n_unique())
