"""Snakemake script: the workflow's graded and ranked files -> one analysis table."""

from retrieval_response.atomic import write_parquet
from retrieval_response.collect import collect_workflow
from retrieval_response.logs import job_log

log = job_log(snakemake.log[0])
graded = collect_workflow(snakemake.input.graded, snakemake.input.ranked)
write_parquet(graded, snakemake.output.graded)
log.info("%d graded samples collected", graded.height)
