"""Start-up checks of a schema-valid workflow config: everything checkable before any job runs.

``check_config`` raises one InputError ``<config file>: config key <key>: <rule>`` at the first
problem. It checks, in order: that no value holds an API key (:func:`check_secrets`, first, so
that no later check can echo one), every number of the config is finite in float64, names that
become path components (dataset names, ranker codes, design names, generic subset names:
``retrieval_response.infra.paths.safe_name``), the keys
that depend on each other (designs, K, ranker lists, a dataset's level, subset, path and
ir_datasets id against its layout, a run's layout, BM25 settings, LLM roles, the subsets of
the layouts that number their rows), that every input file named by the config exists (a BEIR
folder: its qrels split) and every ir_datasets dataset can be read (from the package's
cache unless downloads are allowed), the ``analysis.alpha_grid`` syntax and size, that each target
asked for can have a value, the prompt files, and the
API-key environment variable of each configured model (by name; its value is never shown).
The JSON schema (workflow/schemas/config.schema.yaml) has filled the defaults beforehand;
``schema_input_error`` turns a schema violation into the same one-line error, and
``check_wildcard_values`` refuses names that Snakemake would refuse as wildcard values. The
checks of the datasets' entries and of the input files are :mod:`.input_checks`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import jsonschema

from retrieval_response.datasets.layouts import LAYOUTS_WITHOUT_GOLD, TRACES_LAYOUT
from retrieval_response.infra.errors import InputError
from retrieval_response.infra.json_records import finite_float
from retrieval_response.infra.paths import UnsafeNameError, safe_name
from retrieval_response.infra.secrets import looks_like_key, looks_like_secret
from retrieval_response.llm.cache import public_api_base
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
from retrieval_response.measures.alpha import alpha_grid
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
    judges_against_gold,
    judgment_kinds,
    registered_rankers,
    run_mode,
    runs_llm,
    trace_grade_prompts,
)

LLM_ROLES = ("generator", "grader")


NOT_SHOWN = "(the value is not shown)"
KEY_RULES = {
    "api_key_env": ("holds what looks like an API key, not the name of an environment variable: put the key in a "
                    f"variable (export MY_API_KEY=...) and give its name here {NOT_SHOWN}"),
    "model": ("holds what looks like an API key or token: a model string reaches job scripts, Snakemake's "
              "metadata, caches and summaries; put the key in an environment variable and give its name as "
              f"api_key_env {NOT_SHOWN}"),
    "api_base": ("holds what looks like an API key or token in its host or path, which reach job scripts and "
                 "Snakemake's metadata: give the key by api_key_env, or as the URL's user:password@ or query "
                 f"string, which are kept out of every file {NOT_SHOWN}"),
}
"""The rule broken by a key in an LLM section's ``api_key_env``, ``model`` or ``api_base``."""
VALUE_RULE = ("holds what looks like an API key or token: config values reach job scripts, logs and file names; "
              f"keys belong in the environment, named by llm.<role>.api_key_env {NOT_SHOWN}")
NAME_RULE = ("a name in it looks like an API key or token: names become file names and job parameters "
             f"{NOT_SHOWN}")


def _config_leaves(value: object, key: str = "") -> Iterator[tuple[str, object, bool]]:
    """(dotted key, value, whether it is a mapping's key) of every leaf of the config ``value``,
    depth first: a mapping's keys (under the mapping's key) before their values, list items as
    ``key[i]``."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            yield key or "(top level)", name, True
            yield from _config_leaves(item, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _config_leaves(item, f"{key}[{index}]")
    else:
        yield key, value, False


def check_secrets(config: Mapping, config_file: str) -> None:
    """No string of the config, mapping keys included, looks like a secret
    (``infra.secrets.looks_like_secret``): an API key pasted into a path, a name, a model string or
    a URL would reach job scripts, Snakemake's metadata, logs and file names. An LLM section's
    ``model`` and ``api_key_env`` must not look like a key either (``looks_like_key``: also a
    32-hex-digit run, an Azure key's shape); its ``api_base`` is judged by its public part
    (``llm.cache.public_api_base``), since credentials and query strings are kept out of every file
    (``llm.config.withhold_api_base_secrets``). InputError naming the key and the rule
    (:data:`KEY_RULES`, :data:`VALUE_RULE`, :data:`NAME_RULE`), never the value."""
    llm_keys = {f"llm.{role}.{field}": field for role in LLM_ROLES for field in KEY_RULES}
    for key, value, is_name in _config_leaves(config):
        if not isinstance(value, str):
            continue
        field = None if is_name else llm_keys.get(key)
        if field == "api_base":
            bad = looks_like_secret(public_api_base(value))
        elif field is not None:
            bad = looks_like_key(value)
        else:
            bad = looks_like_secret(value)
        if bad:
            rule = NAME_RULE if is_name else KEY_RULES[field] if field else VALUE_RULE
            raise InputError(config_file, f"config key {key}", rule)


def _name(config_file: str, key: str, value: object, what: str) -> None:
    try:
        safe_name(value, what)
    except UnsafeNameError as error:
        raise InputError(config_file, f"config key {key}", str(error)) from None


def distinct_ignoring_case(config_file: str, key: str, names: Iterable[str], what: str) -> None:
    """No two of ``names`` (which become folder names) differ in letter case only: on a
    case-insensitive file system (macOS, Windows) they would name one folder. InputError naming
    ``key`` and both names."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise InputError(config_file, f"config key {key}", (
                f"{what}s {other!r} and {name!r} differ in letter case only, and would share result folders on a "
                "case-insensitive file system (macOS, Windows): rename one"))


def check_finite_numbers(config: Mapping, config_file: str) -> None:
    """Every number of the config, at any depth (``feedback_labels`` values, thresholds, prices,
    BM25 settings ...), is a finite float64 number (``infra.json_records.finite_float``): YAML's
    ``.inf`` and ``.nan`` and an integer beyond float64's range are refused, naming the key."""
    for key, value, is_name in _config_leaves(config):
        if not is_name and isinstance(value, int | float) and not isinstance(value, bool) and finite_float(value) is None:
            raise InputError(config_file, f"config key {key}", f"{value!r} is not a finite number: every number of "
                             "the config must be finite in float64 (|x| < 1.8e308; no .inf or .nan)")


def check_names(config: Mapping, config_file: str) -> None:
    """Every config value that becomes a path component is a safe name, and the dataset names, and
    the ranker codes, are distinct ignoring letter case (:func:`distinct_ignoring_case`)."""
    for code in config["rankers"]:
        _name(config_file, "rankers", code, "ranker code")
    distinct_ignoring_case(config_file, "rankers", config["rankers"], "ranker code")
    for name, dataset in config["datasets"].items():
        _name(config_file, "datasets", name, "dataset name")
        if dataset.get("subset") is not None:
            _name(config_file, f"datasets.{name}.subset", dataset["subset"], "subset name")
        if dataset.get("split") is not None:
            _name(config_file, f"datasets.{name}.split", dataset["split"], "split name")
        for design in dataset_designs(config, name):
            _name(config_file, f"datasets.{name}.designs", design_name(design), "design name")
    distinct_ignoring_case(config_file, "datasets", config["datasets"], "dataset name")


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
    (that it holds no key itself is :func:`check_secrets`'); each remote model string names a
    provider litellm can route (``llm.config.provider_problem``)."""
    llm = config["llm"]
    for role in LLM_ROLES:
        if role not in llm:
            raise InputError(config_file, f"config key llm.{role}", "datasets are configured but no LLM is given for this role")
        variable = llm[role].get("api_key_env")
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


def check_targets(config: Mapping, config_file: str) -> None:
    """Each target of ``analysis.targets`` can have a value in a config of datasets that are not
    traces: ``feedback`` and the context grade are targets of traces only, the gold grade needs
    ``llm.grade_reference: both``, an expected grade ``logprobs`` of the grader, the gold targets
    a layout with gold answers (``plan.judges_against_gold``) (traces are
    checked on their records: ``input_checks.check_trace_records``; published files on theirs)."""
    if run_mode(config) != RunMode.DATASETS or not config["datasets"]:
        return
    for target in config["analysis"].get("targets") or ():
        if target in ("feedback", "grade_context", "grade_context_expected"):
            rule = "a target of traces only (layout traces, docs/TRACES.md): these datasets have none"
        elif target.startswith("grade_gold") and config["llm"]["grade_reference"] != "both":
            rule = "the grade against the gold answers needs llm.grade_reference: both"
        elif target.endswith("_expected") and not config["llm"]["grader"].get("logprobs"):
            rule = "an expected grade is read from the grader's log-probabilities: set llm.grader.logprobs: true"
        elif (target.startswith("answer_") or target.startswith("grade_gold")) and not judges_against_gold(config):
            rule = f"it needs gold answers, which no layout of these datasets has ({', '.join(LAYOUTS_WITHOUT_GOLD)})"
        else:
            continue
        raise InputError(config_file, "config key analysis.targets", f"target {target!r} can have no value: {rule}")


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
    check_secrets(config, config_file)
    check_finite_numbers(config, config_file)
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
    check_targets(config, config_file)
    if runs_llm(config):
        check_prompts(config, config_file)
        check_llm(config, config_file, environ)
