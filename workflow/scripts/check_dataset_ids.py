"""Snakemake script: every dataset's texts table -> no query id in two datasets (before any LLM job)."""

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import check_ids_across_datasets

log = job_log(snakemake.log[0])
report = check_ids_across_datasets(dict(zip(snakemake.params.datasets, snakemake.input.texts, strict=True)))
write_json(report, snakemake.output.checked)
log.info("%d queries of %d datasets: no id in two datasets", report["queries"], report["datasets"])
