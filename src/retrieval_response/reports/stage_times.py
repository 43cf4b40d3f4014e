"""Time per workflow stage, from the benchmark files Snakemake writes for each job."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl


def stage_times(benchmark_files: Sequence[str | os.PathLike], root: str | os.PathLike) -> dict[str, dict]:
    """Per stage (the first folder of each file's path below ``root``, i.e. the rule name):
    ``jobs``, ``seconds`` (sum of the jobs' wall-clock seconds, column ``s``) and ``max_rss_mb``
    (largest resident memory of one job; null where Snakemake could not measure it)."""
    rows = []
    for path in benchmark_files:
        stage = Path(path).relative_to(root).parts[0]
        table = pl.read_csv(path, separator="\t", null_values=["-", "NA"], infer_schema_length=0)
        rows.append({"stage": stage, "seconds": float(table["s"][0]),
                     "max_rss": float(table["max_rss"][0]) if table["max_rss"][0] is not None else None})
    if not rows:
        return {}
    summary = (
        pl.DataFrame(rows, schema={"stage": pl.String, "seconds": pl.Float64, "max_rss": pl.Float64})
        .group_by("stage")
        .agg(jobs=pl.len(), seconds=pl.col("seconds").sum().round(2), max_rss_mb=pl.col("max_rss").max().round(1))
        .sort("stage")
    )
    return {row.pop("stage"): row for row in summary.iter_rows(named=True)}
