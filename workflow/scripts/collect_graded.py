"""Snakemake script: the workflow's graded, ranked, texts (and judgments) files -> one analysis table with answer
scores (and the document judgments of each sample's top K)."""

import _workflow_package  # noqa: F401

from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.collect import collect_workflow, fully_judged

log = job_log(snakemake.log[0])
graded = collect_workflow(
    snakemake.input.graded,
    snakemake.input.ranked,
    snakemake.params.texts_of_graded,
    subsets=snakemake.params.subsets_of_graded,
    judgments_paths=snakemake.params.judgments_of_graded,
    erag_metric=snakemake.params.erag_metric,
)
if snakemake.params.judged_only:
    kept = fully_judged(graded)
    log.info("analysis.judged_only: %d of %d samples have a fully judged top-K", kept.height, graded.height)
    graded = kept
write_parquet(graded, snakemake.output.graded)
log.info(
    "%d graded samples collected, %d with a gold answer",
    graded.height,
    graded["answer_f1"].is_not_null().sum(),
)
