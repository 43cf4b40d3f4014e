"""Snakemake script: analysis table -> the LLM judge checked against gold answers (rank, AUC, ideal answers), and its figure."""

import _workflow_package  # noqa: F401

from retrieval_response.agreement.judge_gold import judge_agreement, no_gold_reason
from retrieval_response.figures.judge_figure import plot_judge_agreement
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
graded = read_analysis_table(snakemake.input.graded)
table = judge_agreement(graded, resamples=snakemake.params.resamples, seed=snakemake.params.seed)
reason = no_gold_reason(graded) if table.height == 0 else None
write_parquet(table, snakemake.output.table)
plot_judge_agreement(table, snakemake.output.figure, reason=reason)
log.info("judge agreement: %s", reason or f"{table.height} rows, {table['n_samples'][-1]} samples with a gold answer")
