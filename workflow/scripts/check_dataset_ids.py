"""Snakemake script: every dataset's texts table and every ranked file -> no query id in two
datasets, and a sample to analyse (before any LLM job)."""

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_json
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.collect import check_samples_to_analyse
from retrieval_response.tables.workflow_tables import check_ids_across_datasets

log = job_log(snakemake.log[0])
report = check_ids_across_datasets(dict(zip(snakemake.params.datasets, snakemake.input.texts, strict=True)))
report |= check_samples_to_analyse(snakemake.input.ranked, judged_only=snakemake.config["analysis"]["judged_only"],
                                   config_file=snakemake.params.config_file)
write_json(report, snakemake.output.checked)
log.info("%d queries of %d datasets: no id in two datasets; %d ranked samples, %d fully judged", report["queries"],
         report["datasets"], report["samples"], report["fully_judged"])
