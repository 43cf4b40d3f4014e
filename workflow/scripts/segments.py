"""Snakemake script: analysis table -> the segments table of one segmentation (which segment,
target and measure the analysis correlates, with its n, and why not the others); with
``verdict_samples``, counted on the samples the verdict compares, for its candidate measures."""

import _workflow_package  # noqa: F401

from retrieval_response.analysis.samples import segment_table
from retrieval_response.decide.verdict import verdict_candidates, verdict_samples
from retrieval_response.infra.atomic import write_parquet
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
graded = read_analysis_table(snakemake.input.graded)
candidates = snakemake.params.get("candidates")
measures = verdict_candidates(graded, list(candidates) if candidates else None) if snakemake.params.verdict_samples else None
segments = segment_table(
    verdict_samples(graded, measures) if snakemake.params.verdict_samples else graded,
    measures=measures,
    segmentation=snakemake.wildcards.segmentation,
    min_segment_samples=snakemake.params.min_segment_samples,
    finer_keys=tuple(snakemake.params.finer_keys),
    targets=list(snakemake.params.targets) if snakemake.params.targets else None,
)
write_parquet(segments, snakemake.output.segments)
log.info("%d segment x target x measure rows, %d left out", segments.height, segments.filter(~segments["kept"]).height)
