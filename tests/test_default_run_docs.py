"""docs/OUTPUTS.md's figures of the default run are those of the committed run summary."""

from __future__ import annotations

import json

import pytest

from conftest import REPO

pytestmark = pytest.mark.unit


def test_the_default_run_paragraph_quotes_the_committed_run_summary():
    summary = json.loads((REPO / "docs/default_run/run_summary.json").read_text())
    stages, total = summary["stages"], summary["total"]
    graded = sum(stages["grade"]["samples_by_status"].values())
    llm_seconds = sum(stages[s]["seconds"] for s in ("answer_ideal", "answer_topk", "grade"))
    expected = [
        f"{total['requests']} LLM requests of which {total['calls']} reached the model",
        f"{stages['grade']['samples_by_status']['graded']} of {graded} samples graded",
        f"ideal answers {stages['answer_ideal']['seconds']:.0f} s, top-K answers {stages['answer_topk']['seconds']:.0f} s, "
        f"grades {stages['grade']['seconds']:.0f} s, i.e. {llm_seconds / graded:.1f} s per graded sample",
        f"embedding {summary['stage_times']['embed']['seconds']:.0f} s",
        f"evaluated {total['prompt_tokens'] - total['cached_prompt_tokens']:,} prompt tokens "
        f"({total['cached_prompt_tokens']:,} more came from its prompt",
        f"generated {total['completion_tokens']:,}",
    ]
    text = " ".join((REPO / "docs/OUTPUTS.md").read_text().split())
    for phrase in expected:
        assert phrase in text, phrase
    assert summary["provenance"]["cpu"]["features"] and "avx512f" in summary["provenance"]["cpu"]["features"]
