"""docs/OUTPUTS.md's figures of the default run are those of the committed run summary."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

from conftest import REPO
from retrieval_response.reports.doc_figures import RUN_SUMMARIES, default_run

pytestmark = pytest.mark.unit


def test_the_default_run_figures_are_those_of_the_committed_run_summary():
    """The figures the page quotes (``default_run``, computed by doc_figures) against the summary's
    own counts, and the page quotes every one of them through a marker."""
    summary = json.loads((REPO / RUN_SUMMARIES["avx512"]).read_text())
    stages, total = summary["stages"], summary["total"]
    graded = sum(stages["grade"]["samples_by_status"].values())
    llm_seconds = sum(stages[s]["seconds"] for s in ("answer_ideal", "answer_topk", "grade"))
    expected = {
        "requests": total["requests"], "calls": total["calls"],
        "graded": stages["grade"]["samples_by_status"]["graded"], "graded_of": graded,
        "answer_ideal_seconds": stages["answer_ideal"]["seconds"], "answer_topk_seconds": stages["answer_topk"]["seconds"],
        "grade_seconds": stages["grade"]["seconds"], "llm_seconds_per_graded_sample": llm_seconds / graded,
        "embed_seconds": summary["stage_times"]["embed"]["seconds"],
        "evaluated_prompt_tokens": total["prompt_tokens"] - total["cached_prompt_tokens"],
        "cached_prompt_tokens": total["cached_prompt_tokens"], "completion_tokens": total["completion_tokens"],
    }
    figures = default_run(REPO).filter(pl.col("run") == "avx512").row(0, named=True)
    assert {name: figures[name] for name in expected} == pytest.approx(expected)
    quoted = set(re.findall(r"<!--\{\{default_run: run=avx512 \\\| (\w+)", (REPO / "docs/OUTPUTS.md").read_text()))
    assert set(expected) <= quoted
    assert summary["provenance"]["cpu"]["features"] and "avx512f" in summary["provenance"]["cpu"]["features"]
