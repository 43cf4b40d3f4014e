"""Config validation, start-up checks, and input functions shared by all rules.

Every check that needs no job runs here, while the Snakefile is parsed: first the config keys
renamed in this release are read under their new names (``renamed_keys.resolve_renamed_keys``: an
old name prints one notice line, old and new together stop the run), then the JSON schema, then the
library's ``retrieval_response.workflow_config.checks`` (wildcard values, safe path names,
cross-key rules, input files, alpha grid, prompts, API-key variables, no pasted key) and, for traces, every
record of their files, once per content (``input_checks.check_trace_records``); then the secret parts of
every ``api_base`` leave the config for the environment (``withhold_api_base_secrets``). A failure
prints one line ``<config file>: config key <key>: <rule>`` to stderr and exits with status 1.
What the config asks to build (its run mode, designs, units, shards) comes from
``retrieval_response.workflow_config.plan`` and ``retrieval_response.llm.sharding``; the target
lists sit next to the rules whose paths they name. ``RUN_MODE`` (``plan.RunMode``: ``datasets``,
``traces`` or ``published``) is what the whole run does, decided once here from the config; the
rule files branch on it and on nothing else.
"""

import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.io import PeriodicityDetector
from snakemake.utils import validate

from retrieval_response.analysis.segments import SEGMENTATIONS, VERDICT_SEGMENTATIONS
from retrieval_response.embedding import hub_models
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.paths import NAME_PATTERN
from retrieval_response.llm.config import ModelConfig, withhold_api_base_secrets
from retrieval_response.llm.jobs import job_threads, llm_cap, llm_jobs, llm_units
from retrieval_response.llm.sharding import SHARD_PATTERN, shard_names
from retrieval_response.workflow_config import checks, input_checks, plan, renamed_keys
from retrieval_response.workflow_config.plan import RunMode
from retrieval_response.workflow_config.shipped_paths import resolve_shipped_paths

CONFIG_FILE = ", ".join(map(str, workflow.overwrite_configfiles or ["config.yaml"]))


def validate_schema():
    """Fill the schema's defaults into ``config``; InputError naming the key of a schema violation."""
    try:
        validate(config, schema="../schemas/config.schema.yaml")
    except WorkflowError as error:
        input_error = checks.schema_input_error(error, CONFIG_FILE)
        if input_error is None:
            raise
        raise input_error from None


def startup_check(check, *args):
    """Run ``check(*args)`` and return its value; on InputError print its one line to stderr and
    exit with status 1."""
    try:
        return check(*args)
    except InputError as error:
        print(error, file=sys.stderr)
        sys.exit(1)


def resolve_renamed_keys():
    """Move the config's old key names to their new ones (``embedders`` -> ``rankers``), so that
    nothing after this reads an old name; the main process prints the notice line of an old one.
    """
    notice = renamed_keys.resolve_renamed_keys(config, CONFIG_FILE)
    if notice and workflow.is_main_process:
        print(notice, file=sys.stderr)


startup_check(resolve_renamed_keys)
startup_check(validate_schema)
resolve_shipped_paths(config, workflow.basedir)
startup_check(
    checks.check_wildcard_values,
    config,
    CONFIG_FILE,
    PeriodicityDetector().is_periodic,
)
startup_check(checks.check_config, config, CONFIG_FILE)
# Traces files are read in the main process (a dry run too), once per content (TRACE_CHECKS).
# Whether a trace has a time (the monitor rule runs then) is known there, from the cache too; a
# job's own Snakemake (on a cluster node) takes it from the monitor table, which every job after
# the monitor finds written.
if workflow.is_main_process:
    TIMED_TRACES = startup_check(
        input_checks.check_trace_records, config, CONFIG_FILE, input_checks.TRACE_CHECKS
    )
else:
    TIMED_TRACES = os.path.exists("results/analysis/monitor.parquet")
plan.resolve_beir_folders(config)
startup_check(plan.resolve_run_codes, config, CONFIG_FILE)
# Run files name queries of their dataset: read once, in the main process (a dry run too).
if workflow.is_main_process:
    startup_check(input_checks.check_run_queries, config)
# Credentials and query tokens of api_base go to the jobs through the environment, not through
# the config that Snakemake writes into every job script.
startup_check(withhold_api_base_secrets, config["llm"], CONFIG_FILE)

DATASETS = config["datasets"]
RANKERS = config["rankers"]
LLM = config["llm"]
ANALYSIS = config["analysis"]
SHARDS = shard_names(LLM["shards"])
HUMAN_GRADES = config["analysis"]["human"]
RUN_MODE = plan.run_mode(config)


wildcard_constraints:
    dataset=NAME_PATTERN,
    ranker=NAME_PATTERN,
    design=plan.DESIGN_PATTERN,
    segmentation="|".join(sorted({*SEGMENTATIONS, *VERDICT_SEGMENTATIONS})),
    shard=SHARD_PATTERN,


def dataset_designs(dataset):
    """The designs of ``dataset``: its own list, else the top-level one."""
    return plan.dataset_designs(config, dataset)


def design_pairs(wildcards):
    """The [Nc, Np] pairs of the designs of the ``dataset`` wildcard."""
    return plan.design_pairs(config, wildcards.dataset)


def dataset_source(wildcards):
    """What a dataset is read from: its ``path``, or the ``ir_datasets_id`` of the ir_datasets layout."""
    dataset = DATASETS[wildcards.dataset]
    return dataset.get("path") or dataset["ir_datasets_id"]


def dataset_source_files(wildcards):
    """Every file the dataset is read from, as rule inputs (a BEIR or TREC dataset's qrels, corpus
    and queries); none for the ir_datasets layout (read by its id from the package's cache).
    """
    return plan.dataset_source_files(config, wildcards.dataset)


def corpus_level(wildcards):
    """True when the ``dataset`` wildcard's dataset retrieves from its whole corpus."""
    return plan.is_corpus_level(config, wildcards.dataset)


def unit_texts(wildcards):
    """The texts table of the unit (dataset, ranker, design) of the wildcards: the dataset's, or the
    candidates that a corpus-level ranker retrieved."""
    return plan.unit_texts(
        config, wildcards.dataset, wildcards.ranker, wildcards.design
    )


def dataset_units():
    """Every (dataset, ranker code, design name) of the config, in a stable order."""
    return plan.dataset_units(config)


def embedded_pairs():
    """Every (dataset, ranker code) whose ranker is dense (served by the embed rule)."""
    return plan.embedded_pairs(config)


def embed_inputs(wildcards):
    """Inputs of the embed rule: the texts, plus the corpus of a corpus-level dataset."""
    inputs = {"texts": f"results/texts/{wildcards.dataset}.parquet"}
    if corpus_level(wildcards):
        inputs["corpus"] = f"results/corpus/{wildcards.dataset}.parquet"
    return inputs


def rank_inputs(wildcards):
    """Inputs of the rank rule: the texts, plus the vectors of a dense ranker, or the run file and
    the dataset's source files (qrels, corpus and queries, whose ids the run must name; none for ir_datasets)
    of a run; a lexical ranker needs the texts only."""
    inputs = {"texts": f"results/texts/{wildcards.dataset}.parquet"}
    kind = plan.ranker_kind(config, wildcards.dataset, wildcards.ranker)
    if kind == "dense":
        inputs["vectors"] = (
            f"results/embeddings/{wildcards.ranker}/{wildcards.dataset}.parquet"
        )
    elif kind == "run":
        inputs["run"] = DATASETS[wildcards.dataset]["run"]
        inputs["source"] = dataset_source_files(wildcards)
    if corpus_level(wildcards):
        inputs["corpus"] = f"results/corpus/{wildcards.dataset}.parquet"
    return inputs


def ranker_params(wildcards):
    """What the rank script needs to know of the ranker: its kind, its registry entry (null for a run)
    and the dataset's layout and source (the corpus whose ids a run may name)."""
    kind = plan.ranker_kind(config, wildcards.dataset, wildcards.ranker)
    return {
        "kind": kind,
        "spec": None if kind == "run" else RANKERS[wildcards.ranker],
        "layout": DATASETS[wildcards.dataset]["layout"],
        "source": dataset_source(wildcards),
    }


def design_of(wildcards):
    """The design (Nc, Np, K list) of the ``dataset`` and ``design`` wildcards."""
    return plan.design_by_name(config, wildcards.dataset, wildcards.design, CONFIG_FILE)


def corpus_cutoffs(wildcards):
    """The K list of the corpus-level ``dataset`` wildcard's dataset."""
    return plan.corpus_cutoffs(config, wildcards.dataset)


def dataset_nps(wildcards):
    """The distinct Np values of the designs of ``dataset``."""
    return plan.dataset_nps(config, wildcards.dataset)


def model_param(role):
    """Rule param of the LLM ``role`` (generator, grader): its config in ModelConfig.param_form(),
    credentials removed; the jobs read the model itself from the config."""
    return ModelConfig.from_mapping(LLM[role]).param_form() if LLM.get(role) else None


def llm_threads(role):
    """Threads of the jobs of ``llm.<role>``: every core of this run for a local model, one for a
    remote API. Without ``--cores`` (a cluster run), 1: set the cores of a cluster job with
    ``set-threads`` (commented in profiles/slurm)."""
    return job_threads(LLM.get(role), workflow.resource_settings.cores)


# The run's cap on the ``llm`` resource: llm.pacing.jobs, unless --resources (or a profile) sets a
# smaller one. Set in the main process only: a job's own Snakemake (on a cluster node) schedules
# no other job.
LLM_JOBS = llm_jobs(LLM["pacing"])
if workflow.is_main_process:
    startup_check(
        lambda: workflow.register_resource(
            "llm",
            llm_cap(workflow.global_resources.get("llm").value, LLM_JOBS, CONFIG_FILE),
        )
    )


def llm_resource(*roles):
    """The ``llm`` resource of the jobs that call the models of ``roles``: the whole cap
    (llm.pacing.jobs) when one of them is local, so they run alone; 1 for hosted models, so up to
    llm.pacing.jobs of their jobs run side by side."""
    return llm_units([LLM.get(role) for role in roles], LLM_JOBS)


# Hugging Face hub models (sentence_transformers backend): offline (HF_HUB_OFFLINE=1, inherited by
# every job) unless models.allow_downloads is true; a hub model that is neither a local folder nor
# cached while downloads are off stops the run here with one line.
hub_models.apply_download_policy(config["models"]["allow_downloads"])
MISSING_HUB_MODEL = hub_models.first_missing_model(
    RANKERS, allow_downloads=config["models"]["allow_downloads"]
)
if MISSING_HUB_MODEL:
    sys.exit(f"{CONFIG_FILE}: {': '.join(MISSING_HUB_MODEL)}")
