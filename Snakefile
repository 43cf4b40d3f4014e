"""retrieval-response: which retrieval measure predicts the quality of RAG answers.

Stages: prepare (query-texts samples) -> embed -> rank -> LLM answers and grades -> analysis.
With a ``published:`` entry in the config only the analysis runs, on the published files.
"""

import os

from snakemake.utils import min_version

# No network at run time: models come from installed packages, litellm's price map from disk.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

min_version("9.0")


# config.yaml is the default; a --configfile replaces it rather than being merged into it.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/rank.smk"
include: "workflow/rules/llm.smk"
include: "workflow/rules/analysis.smk"


rule all:
    default_target: True
    input:
        all_targets(),
    localrule: True
