"""Snakemake script: human grades -> Krippendorff's alpha and Spearman agreement table."""

import _workflow_package  # noqa: F401

from retrieval_response.agreement.human_llm import agreement_table
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.human_grades import read_human_grades

log = job_log(snakemake.log[0])
table = agreement_table(
    read_human_grades(snakemake.input.human), resamples=snakemake.params.resamples, seed=snakemake.params.seed
)
write_parquet(table, snakemake.output.agreement)
log.info("agreement over %d pairs", table.height)
