"""Config validation, start-up checks, and input functions shared by all rules.

Every check that needs no job runs here, while the Snakefile is parsed: the JSON schema, then
``retrieval_response.workflow_config.checks.check_config`` (safe path names, cross-key rules, input
files, alpha grid, prompts, API-key variables). A failure prints one line
``<config file>: config key <key>: <rule>`` to stderr and exits with status 1.
"""

import sys
from pathlib import Path

import jsonschema
from snakemake.exceptions import WorkflowError
from snakemake.io import PeriodicityDetector
from snakemake.utils import validate

from retrieval_response.workflow_config import checks as config_checks
from retrieval_response.datasets.layouts import LAYOUTS_WITHOUT_GOLD
from retrieval_response.infra.errors import InputError
from retrieval_response.llm.config import ModelConfig
from retrieval_response.infra.paths import NAME_PATTERN

CONFIG_FILE = ", ".join(map(str, workflow.overwrite_configfiles or ["config.yaml"]))


def shipped_or_local(path):
    """``path`` as given, unless it is relative, missing here, and shipped with the workflow."""
    if path is None or Path(path).is_absolute() or Path(path).exists():
        return path
    shipped = Path(workflow.basedir) / path
    return str(shipped) if shipped.exists() else path


def resolve_shipped_paths():
    """Let configs run from any working directory use the shipped data, prompts and model."""
    for dataset in config["datasets"].values():
        dataset["path"] = shipped_or_local(dataset["path"])
    prompts = config["llm"]["prompts"]
    for name in prompts:
        prompts[name] = shipped_or_local(prompts[name])
    for role in ("generator", "grader"):
        if role in config["llm"]:
            config["llm"][role]["model_path"] = shipped_or_local(
                config["llm"][role]["model_path"]
            )


def schema_violation(error):
    """The jsonschema error that Snakemake's validation error was raised from, if any."""
    cause = error.__cause__ or error.__context__
    return cause if isinstance(cause, jsonschema.ValidationError) else None


def validate_schema():
    """Fill the schema's defaults into ``config``; InputError naming the key of a schema violation."""
    try:
        validate(config, schema="../schemas/config.schema.yaml")
    except WorkflowError as error:
        violation = schema_violation(error)
        if violation is None:
            raise
        key = ".".join(map(str, violation.absolute_path)) or "(top level)"
        raise InputError(CONFIG_FILE, f"config key {key}", violation.message) from None


def startup_check(check, *args):
    """Run ``check(*args)``; on InputError print its one line to stderr and exit with status 1."""
    try:
        check(*args)
    except InputError as error:
        print(error, file=sys.stderr)
        sys.exit(1)


startup_check(validate_schema)
resolve_shipped_paths()

DATASETS = config["datasets"]
EMBEDDERS = config["embedders"]
PUBLISHED = config.get("published")


def design_name(design):
    """Path component of one (Nc, Np) design: ``Nc<Nc>_Np<Np>``."""
    return config_checks.design_name(design)


def dataset_designs(dataset):
    """The designs of ``dataset``: its own list, else the top-level one."""
    return config_checks.dataset_designs(config, dataset)


def design_cutoffs(design):
    """The sorted K list of one design: its own, else the top-level one."""
    return config_checks.design_cutoffs(config, design)


def dataset_embedders(dataset):
    """The embedder codes run on ``dataset``: its own list, else every registered code."""
    return config_checks.dataset_embedders(config, dataset)


def check_wildcard_values():
    """Snakemake refuses a wildcard value ending in a substring repeated 20 times; refuse such names here, in one line."""
    detector = PeriodicityDetector()
    for key, names in (("datasets", DATASETS), ("embedders", EMBEDDERS)):
        for name in names:
            if isinstance(name, str) and detector.is_periodic(name):
                raise InputError(
                    CONFIG_FILE,
                    f"config key {key}",
                    f"name {name!r} ends in a repeated substring, which Snakemake refuses",
                )


startup_check(check_wildcard_values)
startup_check(config_checks.check_config, config, CONFIG_FILE)


wildcard_constraints:
    dataset=NAME_PATTERN,
    embedder=NAME_PATTERN,
    design=r"Nc[0-9]+_Np[0-9]+",
    segmentation=r"fit|ratio",
    shard=r"[0-9]+-of-[0-9]+",


def dataset_units():
    """Every (dataset, embedder, design) triple of the config, in a stable order."""
    return [
        (name, code, design_name(design))
        for name in sorted(DATASETS)
        for code in dataset_embedders(name)
        for design in dataset_designs(name)
    ]


def ranked_targets():
    """All ranked-sample files of the config."""
    return [f"results/ranked/{d}/{e}/{s}.parquet" for d, e, s in dataset_units()]


def texts_targets():
    """The texts table of every dataset of the config."""
    return [f"results/texts/{name}.parquet" for name in sorted(DATASETS)]


def graded_targets():
    """All graded-sample files of the config."""
    return [f"results/graded/{d}/{e}/{s}.parquet" for d, e, s in dataset_units()]


LLM = config["llm"]

ANALYSIS = config["analysis"]
SHARDS = [f"{i}-of-{LLM['shards']}" for i in range(1, LLM["shards"] + 1)]


def model_param(role):
    """Rule param of the LLM ``role`` (generator, grader): its config in ModelConfig.param_form(),
    credentials removed; the jobs read the model itself from the config."""
    return ModelConfig.from_mapping(LLM[role]).param_form() if LLM.get(role) else None


def llm_threads(role):
    """Threads of the jobs of ``llm.<role>``: every core of this run for a local model (the
    llama.cpp server inside the job uses them, capped by the cores the machine has, and nothing
    runs beside it), one for a remote API. Without ``--cores`` (a cluster run), 1: set the
    cores of a cluster job with ``set-threads`` (commented in profiles/slurm)."""
    if not (LLM.get(role) or {}).get("model", "").startswith("llamacpp/"):
        return 1
    return workflow.resource_settings.cores or 1


def dataset_nps(wildcards):
    """The distinct Np values of the designs of ``dataset``."""
    return sorted({design["Np"] for design in dataset_designs(wildcards.dataset)})


def design_shards(wildcards):
    """The graded shards of one (dataset, embedder, design)."""
    return expand(
        "results/graded/{dataset}/{embedder}/{design}/{shard}.parquet",
        shard=SHARDS,
        **wildcards,
    )


def llm_summaries():
    """Job summaries of every LLM job of the config."""
    return [
        f"results/answers/ideal/{name}.summary.json" for name in sorted(DATASETS)
    ] + [
        f"results/{kind}/{d}/{e}/{s}/{shard}.summary.json"
        for kind in ("answers/topk", "graded")
        for d, e, s in dataset_units()
        for shard in SHARDS
    ]


def stage_benchmarks():
    """The benchmark file of every timed job of the config (for the run summary)."""
    units = dataset_units()
    return (
        [f"results/benchmarks/prepare_dataset/{d}.tsv" for d in sorted(DATASETS)]
        + sorted({f"results/benchmarks/embed/{e}/{d}.tsv" for d, e, _ in units})
        + [f"results/benchmarks/rank/{d}/{e}/{s}.tsv" for d, e, s in units]
        + [f"results/benchmarks/answer_ideal/{d}.tsv" for d in sorted(DATASETS)]
        + [
            f"results/benchmarks/{rule}/{d}/{e}/{s}/{shard}.tsv"
            for rule in ("answer_topk", "grade")
            for d, e, s in units
            for shard in SHARDS
        ]
        + [
            f"results/benchmarks/correlations/{s}.tsv"
            for s in ANALYSIS["segmentations"]
        ]
        + ["results/benchmarks/figures/figures.tsv"]
    )


def design_of(wildcards):
    """The design (Nc, Np, K list) of the ``dataset`` and ``design`` wildcards."""
    for design in dataset_designs(wildcards.dataset):
        if design_name(design) == wildcards.design:
            return {"Nc": design["Nc"], "Np": design["Np"], "K": design_cutoffs(design)}
    raise InputError(
        CONFIG_FILE,
        f"config key datasets.{wildcards.dataset}.designs",
        f"no design {wildcards.design}",
    )


HUMAN_GRADES = (PUBLISHED or {}).get("human") or ANALYSIS["human"]


def analysis_targets():
    """Correlation and difference tables per segmentation, the figures, the agreement table, and the
    judge-vs-gold table and figure when some dataset's layout can carry gold answers."""
    targets = [
        f"results/analysis/{table}_{segmentation}.parquet"
        for segmentation in ANALYSIS["segmentations"]
        for table in ("correlations", "differences")
    ]
    targets.append("results/figures")
    if HUMAN_GRADES:
        targets.append("results/analysis/agreement.parquet")
    if not PUBLISHED and any(
        dataset["layout"] not in LAYOUTS_WITHOUT_GOLD for dataset in DATASETS.values()
    ):
        targets += [
            "results/analysis/judge_agreement.parquet",
            "results/analysis/judge_agreement.png",
        ]
    return targets


def all_targets():
    """Everything the default target builds."""
    if PUBLISHED:
        return analysis_targets()
    return (
        ranked_targets()
        + graded_targets()
        + analysis_targets()
        + ["results/run_summary.json"]
    )
