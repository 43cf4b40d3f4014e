"""Start-up checks of a schema-valid workflow config: everything checkable before any job runs.

``check_config`` raises one InputError ``<config file>: config key <key>: <rule>`` at the first
problem. It checks, in order: names that become path components (dataset names, ranker
codes, design names, generic subset names: ``retrieval_response.infra.paths.safe_name``), the keys
that depend on each other (designs, K, ranker lists, a dataset's level, subset, path and
ir_datasets id against its layout, a run's layout, BM25 settings, LLM roles, the subsets of
the layouts that number their rows), that every input file named by the config exists (a BEIR
folder: its qrels split) and every ir_datasets dataset can be read (from the package's
cache unless downloads are allowed), the ``analysis.alpha_grid`` syntax and size, the prompt files, and the
API-key environment variable of each configured model (by name; its value is never shown).
The JSON schema (workflow/schemas/config.schema.yaml) has filled the defaults beforehand;
``schema_input_error`` turns a schema violation into the same one-line error, and
``check_wildcard_values`` refuses names that Snakemake would refuse as wildcard values. The
checks of the datasets' entries and of the input files are :mod:`.input_checks`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import jsonschema

from retrieval_response.analysis.measures import alpha_grid
from retrieval_response.datasets.layouts import TRACES_LAYOUT
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.paths import UnsafeNameError, safe_name
from retrieval_response.infra.secrets import looks_like_secret
from retrieval_response.llm.config import is_local, provider_problem
from retrieval_response.llm.prompts import (
    ANSWER_FIELDS,
    GRADE_CONTEXT_FIELDS,
    GRADE_FIELDS,
    GRADE_GOLD_FIELDS,
    UDCG_FIELDS,
    UMBRELA_FIELDS,
    load_prompt,
)
from retrieval_response.workflow_config.input_checks import (
    check_corpus_sizes,
    check_dataset_options,
    check_input_files,
    check_ir_datasets,
    check_numbered_subsets,
    check_retrieval,
    check_traces,
)
from retrieval_response.workflow_config.plan import (
    LEXICAL_BACKENDS,
    RunMode,
    dataset_designs,
    design_cutoffs,
    design_name,
    grades_gold,
    judgment_kinds,
    registered_rankers,
    run_mode,
    runs_llm,
    trace_grade_prompts,
)

LLM_ROLES = ("generator", "grader")


def _name(config_file: str, key: str, value: object, what: str) -> None:
    try:
        safe_name(value, what)
    except UnsafeNameError as error:
        raise InputError(config_file, f"config key {key}", str(error)) from None


def check_names(config: Mapping, config_file: str) -> None:
    """Every config value that becomes a path component is a safe name."""
    for code in config["rankers"]:
        _name(config_file, "rankers", code, "ranker code")
    for name, dataset in config["datasets"].items():
        _name(config_file, "datasets", name, "dataset name")
        if dataset.get("subset") is not None:
            _name(config_file, f"datasets.{name}.subset", dataset["subset"], "subset name")
        if dataset.get("split") is not None:
            _name(config_file, f"datasets.{name}.split", dataset["split"], "split name")
        for design in dataset_designs(config, name):
            _name(config_file, f"datasets.{name}.designs", design_name(design), "design name")


def check_designs(config: Mapping, config_file: str) -> None:
    """Datasets or published data given (published judgments with the texts they judge); rankers
    known (traces need none); designs distinct with 1 <= Np < Nc and K <= Nc."""
    datasets, rankers = config["datasets"], config["rankers"]
    if not config.get("published") and not datasets:
        raise InputError(config_file, "config key datasets", "no dataset configured and no published data given")
    if (config.get("published") or {}).get("judgments") and not config["published"].get("texts"):
        raise InputError(config_file, "config key published.judgments",
                         "judgments need published.texts, the samples_texts.json of the texts they judge")
    if any(not rankers and not dataset.get("run") and dataset["layout"] != TRACES_LAYOUT
           for dataset in datasets.values()):
        raise InputError(config_file, "config key rankers", "datasets are configured but no ranker is registered")
    for name in datasets:
        if datasets[name]["layout"] == TRACES_LAYOUT:
            continue
        for code in registered_rankers(config, name):
            if code not in rankers:
                raise InputError(
                    config_file,
                    f"config key datasets.{name}.rankers",
                    f"unknown ranker code {code!r}; registered codes: {', '.join(sorted(rankers))}",
                )
        if not registered_rankers(config, name) and not datasets[name].get("run"):
            raise InputError(config_file, f"config key datasets.{name}.rankers", "no ranker and no run: nothing ranks it")
        designs = dataset_designs(config, name)
        names = [design_name(design) for design in designs]
        if len(set(names)) != len(names):
            raise InputError(config_file, f"config key designs (dataset {name})", "the same (Nc, Np) design is listed twice")
        for index, design in enumerate(designs):
            nc, np_ = design["Nc"], design["Np"]
            key = (f"config key datasets.{name}.designs[{index}]" if "designs" in datasets[name]
                   else f"config key designs[{index}] (dataset {name})")
            if not 1 <= np_ < nc:
                raise InputError(config_file, key, f"design Nc={nc}, Np={np_} breaks 1 <= Np < Nc")
            too_large = [k for k in design_cutoffs(config, design) if k > nc]
            if too_large:
                origin = "its own K" if "K" in design else "the top-level K"
                raise InputError(config_file, key, f"K={too_large[0]} (from {origin}) exceeds Nc={nc} of design "
                                 f"{design_name(design)}: every K of a design must be <= its Nc")


def check_lexical(config: Mapping, config_file: str) -> None:
    """Each bm25 registry entry has only BM25 keys with valid values (``ranking.lexical.bm25_settings``)."""
    from retrieval_response.ranking.lexical import bm25_settings

    for code, spec in config["rankers"].items():
        if spec.get("backend") in LEXICAL_BACKENDS:
            bm25_settings(code, spec, config_file)


def check_alpha_grid(config: Mapping, config_file: str) -> None:
    """``analysis.alpha_grid`` parses with the analysis' own parser (syntax and size)."""
    try:
        alpha_grid(config["analysis"]["alpha_grid"])
    except ValueError as error:
        raise InputError(config_file, "config key analysis.alpha_grid", str(error)) from None


def check_prompts(config: Mapping, config_file: str) -> None:
    """The answer and grading prompt files, the grading prompt against gold answers when
    ``llm.grade_reference`` asks for it, and those of the document-judgment kinds asked for
    (``udcg``, ``umbrela``), exist and parse (sections and placeholders)."""
    prompts = config["llm"]["prompts"]
    kinds = judgment_kinds(config)
    checked = [("answer", ANSWER_FIELDS, False), ("grade", GRADE_FIELDS, True)]
    if run_mode(config) == RunMode.TRACES:
        checked = [("answer", ANSWER_FIELDS, False)] if "erag" in kinds else []
        asked = {key for name in config["datasets"] for key in trace_grade_prompts(config, name)}
        checked += [(key, fields, True) for prefix, key, fields in (("context", "grade_context", GRADE_CONTEXT_FIELDS),
                                                                    ("gold", "grade_gold", GRADE_GOLD_FIELDS))
                    if prefix in asked]
    checked += [("grade_gold", GRADE_GOLD_FIELDS, True)] if grades_gold(config) else []
    checked += [(kind, fields, False) for kind, fields in (("udcg", UDCG_FIELDS), ("umbrela", UMBRELA_FIELDS))
                if kind in kinds]
    for key, fields, needs_reask in checked:
        path = prompts[key]
        if not Path(path).is_file():
            raise InputError(config_file, f"config key llm.prompts.{key}", f"prompt file {path!r} not found")
        try:
            load_prompt(path, fields, needs_reask=needs_reask)
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(path, "file", f"cannot read as UTF-8 text: {error}") from None


def check_llm(config: Mapping, config_file: str, environ: Mapping[str, str]) -> None:
    """Both LLM roles are configured; each role's ``api_key_env``, when set, names a set variable
    and is no key itself (a value that looks like a secret, ``infra.secrets.looks_like_secret``,
    is refused without being shown); each remote model string names a provider litellm can route
    (:func:`check_provider`)."""
    llm = config["llm"]
    for role in LLM_ROLES:
        if role not in llm:
            raise InputError(config_file, f"config key llm.{role}", "datasets are configured but no LLM is given for this role")
        variable = llm[role].get("api_key_env")
        if variable and looks_like_secret(variable):
            raise InputError(config_file, f"config key llm.{role}.api_key_env",
                             "holds what looks like an API key, not the name of an environment variable: put the key "
                             "in a variable (export MY_API_KEY=...) and give its name here (the value is not shown)")
        if variable and not environ.get(variable):
            raise InputError(
                config_file,
                f"config key llm.{role}.api_key_env",
                f"environment variable {variable} is not set or empty (export the API key under this name)",
            )
        model = llm[role].get("model", "")
        if not is_local(llm[role]) and (problem := provider_problem(model, llm[role].get("api_base"))):
            raise InputError(config_file, f"config key llm.{role}.model",
                             f"litellm cannot route {model!r}: {problem} (name the provider: <provider>/<model>, "
                             f"e.g. openai/{model} for an OpenAI-compatible server at api_base)")


def check_wildcard_values(config: Mapping, config_file: str, is_periodic: Callable[[str], bool]) -> None:
    """No dataset name or ranker code that Snakemake would refuse as a wildcard value: ``is_periodic``
    is Snakemake's test (a value ending in a substring repeated 20 times or more)."""
    for key in ("datasets", "rankers"):
        for name in config[key]:
            if isinstance(name, str) and is_periodic(name):
                raise InputError(
                    config_file, f"config key {key}", f"name {name!r} ends in a repeated substring, which Snakemake refuses"
                )


def schema_input_error(error: BaseException, config_file: str) -> InputError | None:
    """The one-line InputError ``<config file>: config key <dotted key>: <schema message>`` of a schema
    validation failure (``error`` or the jsonschema.ValidationError it was raised from); None when
    ``error`` does not come from a schema violation."""
    violation = error if isinstance(error, jsonschema.ValidationError) else error.__cause__ or error.__context__
    if not isinstance(violation, jsonschema.ValidationError):
        return None
    key = ".".join(map(str, violation.absolute_path)) or "(top level)"
    return InputError(config_file, f"config key {key}", violation.message)


def check_config(config: Mapping, config_file: str, environ: Mapping[str, str] = os.environ) -> None:
    """All start-up checks of a schema-valid config; the first failure raises InputError (one line)."""
    check_names(config, config_file)
    check_traces(config, config_file)
    check_designs(config, config_file)
    check_lexical(config, config_file)
    check_dataset_options(config, config_file)
    check_retrieval(config, config_file)
    check_numbered_subsets(config, config_file)
    check_input_files(config, config_file)
    check_corpus_sizes(config, config_file)
    check_ir_datasets(config, config_file)
    check_alpha_grid(config, config_file)
    if runs_llm(config):
        check_prompts(config, config_file)
        check_llm(config, config_file, environ)
