"""The Slurm profile sizes every rule that becomes a Slurm job: memory and runtime of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from conftest import benchmark

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles/slurm/config.yaml"


sys.path.insert(0, str(REPO / "benchmarks"))  # job_counts imports its sibling module dag
RULES = benchmark("job_counts").workflow_rules()
"""{rule: whether it is local}: the one reading of the rule files, as the job counts use it."""
SLURM_RULES = sorted(name for name, local in RULES.items() if not local)


def test_the_rule_list_is_read():
    assert {"prepare_dataset", "prepare_corpus", "retrieve", "embed", "answer_topk"} <= set(SLURM_RULES)
    assert RULES["all"] and RULES["merge_graded"] and RULES["check_dataset_ids"]  # a local checkpoint


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
