"""Snakemake script: a dataset's traces files (and qrels) -> its texts table, traces table and report."""

import _workflow_package  # noqa: F401

from retrieval_response.datasets.traces import read_traces
from retrieval_response.infra.atomic import write_json, write_parquet
from retrieval_response.infra.logs import job_log

log = job_log(snakemake.log[0])
texts, traces, report = read_traces(list(snakemake.input.sources), feedback_labels=snakemake.params.feedback_labels,
                                    subset=snakemake.params.subset, qrels=snakemake.input.qrels or None,
                                    sample=snakemake.params.sample, seed=snakemake.params.seed)
write_parquet(texts, snakemake.output.texts)
write_parquet(traces, snakemake.output.traces)
write_json(report, snakemake.output.report)
log.info("%s: %d traces of %d queries by %s%s", snakemake.wildcards.dataset, report["traces"], report["queries"],
         ", ".join(report["systems"]),
         f" (a sample of the {report['sample']['of']} queries, traces.sample)" if report["sample"] else "")
