"""retrieval-response: which retrieval measure predicts the quality of RAG answers.

Stages: prepare (query-texts samples) -> embed -> rank -> document judgments (optional) -> LLM
answers and grades -> analysis.
With a ``published:`` entry in the config only the analysis runs, on the published files.
"""

import os
import sys
from pathlib import Path

from snakemake.utils import min_version

# The library is imported from this checkout's src/: installed editable in install.sh's venv,
# not installed at all in a --sdm conda setup (envs/snakemake.yaml, envs/<stage>.yaml).
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from retrieval_response.embedding import hub_models
from retrieval_response.infra.errors import InputError
from retrieval_response.workflow_config.yaml_bounds import check_yaml_expansion

# No network at run time for litellm: its price map comes from disk. Hub models: below.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

min_version("9.0")


# A YAML alias bomb stops here, in one line, before anything walks the config: Snakemake has
# loaded a --configfile already (as a graph of shared references, which is quick) but not yet
# validated it, and config.yaml is read only below. (A bomb of nested mappings given with
# --configfile hangs in Snakemake's own config merge, before this file runs.)
for _config_path in workflow.overwrite_configfiles or ["config.yaml"]:
    try:
        check_yaml_expansion(_config_path)
    except InputError as error:
        sys.exit(str(error))

# config.yaml is the default; a --configfile replaces it rather than being merged into it.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/embed.smk"
include: "workflow/rules/rank.smk"
include: "workflow/rules/judge_documents.smk"
include: "workflow/rules/llm.smk"
include: "workflow/rules/analysis.smk"


# Hugging Face hub models (sentence_transformers backend): offline (HF_HUB_OFFLINE=1, inherited by
# every job) unless models.allow_downloads is true; a hub model that is neither a local folder nor
# cached while downloads are off stops the run here with one line.
hub_models.apply_download_policy(config["models"]["allow_downloads"])
MISSING_HUB_MODEL = hub_models.first_missing_model(
    EMBEDDERS, allow_downloads=config["models"]["allow_downloads"]
)
if MISSING_HUB_MODEL:
    sys.exit(f"{CONFIG_FILE}: {': '.join(MISSING_HUB_MODEL)}")


# Everything the default target builds: in published mode the analysis only, else the ranked and
# graded samples, the analysis and the run summary.
ALL_TARGETS = (
    ANALYSIS_TARGETS
    if PUBLISHED
    else RANKED_TARGETS
    + GRADED_TARGETS
    + ANALYSIS_TARGETS
    + ["results/run_summary.json"]
)


rule all:
    default_target: True
    input:
        ALL_TARGETS,
    localrule: True
