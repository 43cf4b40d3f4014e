"""The Slurm profile sizes every rule that becomes a Slurm job: memory and runtime of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles/slurm/config.yaml"


def workflow_rules() -> dict[str, bool]:
    """{rule name: whether it is a local rule} of the Snakefile and workflow/rules/*.smk."""
    rules = {}
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]:
        parts = re.split(r"(?m)^\s*rule (\w+):", path.read_text())
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            rules[name] = bool(re.search(r"(?m)^\s*localrule:\s*True", body))
    return rules


RULES = workflow_rules()
SLURM_RULES = sorted(name for name, local in RULES.items() if not local)


def test_the_rule_list_is_read():
    assert {"prepare_dataset", "prepare_corpus", "retrieve", "embed", "answer_topk"} <= set(SLURM_RULES)
    assert RULES["all"] and RULES["merge_graded"]


@pytest.mark.parametrize("rule", SLURM_RULES)
def test_every_slurm_job_has_memory_and_runtime(rule):
    resources = yaml.safe_load(PROFILE.read_text())["set-resources"].get(rule)
    assert resources is not None, f"profiles/slurm sets no resources for rule {rule}"
    assert {"mem_mb", "runtime"} <= set(resources), f"rule {rule}: {resources}"
    for key in ("mem_mb", "runtime"):
        assert eval(str(resources[key]), {"attempt": 2}) > eval(str(resources[key]), {"attempt": 1}), \
            f"rule {rule}: {key} must grow with the attempt (the profile retries)"


def test_the_profile_names_no_unknown_rule():
    assert set(yaml.safe_load(PROFILE.read_text())["set-resources"]) <= set(RULES)
