"""Snakemake script: analysis table, the verdict's segments tables and the run's agreement tables
-> the verdict table with the judge's checks, the verdict in words and its recommendations as
reStructuredText."""

import _workflow_package  # noqa: F401
import polars as pl

from retrieval_response.analysis.segments import VERDICT_SEGMENTATIONS
from retrieval_response.decide.judge_check import judge_checks, with_judge_checks
from retrieval_response.decide.summary import verdict_rst, write_verdict_text
from retrieval_response.decide.verdict import verdict_candidates, verdict_table
from retrieval_response.infra.atomic import write_parquet, write_text
from retrieval_response.infra.logs import job_log
from retrieval_response.tables.workflow_tables import read_analysis_table

log = job_log(snakemake.log[0])
graded = read_analysis_table(snakemake.input.graded)
candidates = snakemake.params.candidates
verdict = verdict_table(
    graded,
    alpha_grid=snakemake.params.alpha_grid,
    segments=dict(zip(VERDICT_SEGMENTATIONS, map(pl.read_parquet, snakemake.input.segments), strict=True)),
    bootstrap_resamples=snakemake.params.bootstrap_resamples,
    seed=snakemake.params.seed,
    measures=verdict_candidates(graded, list(candidates) if candidates else None),
    targets=list(snakemake.params.targets) if snakemake.params.targets else None,
    corr_type=snakemake.params.corr_type,
    compat=snakemake.params.compat,
)
checks = {name: pl.read_parquet(path) for name, path in snakemake.input.items() if name in ("umbrela", "judge", "human")}
verdict = with_judge_checks(verdict, judge_checks(**checks))
write_parquet(verdict, snakemake.output.table)
write_verdict_text(verdict, snakemake.output.text)
write_text(verdict_rst(verdict), snakemake.output.rst)
log.info("%d verdict rows: %s; %d samples left out for a missing judgment", verdict.height,
         ", ".join(f"{d} {n}" for d, n in verdict["decision"].value_counts(sort=True).iter_rows()),
         verdict.unique(["subset", "E"])["samples_left_out"].sum())
