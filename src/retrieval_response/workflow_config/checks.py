"""Start-up checks of a schema-valid workflow config: everything checkable before any job runs.

``check_config`` raises one InputError ``<config file>: config key <key>: <rule>`` at the first
problem. It checks, in order: names that become path components (dataset names, embedder
codes, design names, generic subset names: ``retrieval_response.infra.paths.safe_name``), the keys
that depend on each other (designs, K, embedder lists, a dataset's level, subset, path and
ir_datasets id against its layout, a run's layout, BM25 settings, LLM roles, the subsets of
the layouts that number their rows), that every input file named by the config exists (a BEIR
folder: its qrels split) and every ir_datasets dataset can be read (from the package's
cache unless downloads are allowed), the ``analysis.alpha_grid`` syntax and size, the prompt files, and the
API-key environment variable of each configured model (by name; its value is never shown).
The JSON schema (workflow/schemas/config.schema.yaml) has filled the defaults beforehand;
``schema_input_error`` turns a schema violation into the same one-line error, and
``check_wildcard_values`` refuses names that Snakemake would refuse as wildcard values.
``check_trace_records`` reads the traces files record by record (the workflow's main process runs
it after ``check_config``) and raises every bad record at once, one line each.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import jsonschema

from retrieval_response.analysis.measures import alpha_grid
from retrieval_response.datasets import ir_datasets_layout
from retrieval_response.datasets.judged_corpus import beir_qrels, corpus_file, has_records
from retrieval_response.datasets.layouts import CORPUS_LAYOUTS, TRACES_LAYOUT, check_options, row_subset
from retrieval_response.datasets.traces import read_qrels, read_trace_records
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
from retrieval_response.workflow_config.plan import (
    LEXICAL_BACKENDS,
    dataset_designs,
    dataset_embedders,
    design_cutoffs,
    design_name,
    grades_gold,
    judgment_kinds,
    runs_llm,
    trace_datasets,
    trace_files,
    trace_grade_prompts,
    traces_mode,
)

LLM_ROLES = ("generator", "grader")


def _name(config_file: str, key: str, value: object, what: str) -> None:
    try:
        safe_name(value, what)
    except UnsafeNameError as error:
        raise InputError(config_file, f"config key {key}", str(error)) from None


def check_names(config: Mapping, config_file: str) -> None:
    """Every config value that becomes a path component is a safe name."""
    for code in config["embedders"]:
        _name(config_file, "embedders", code, "embedder code")
    for name, dataset in config["datasets"].items():
        _name(config_file, "datasets", name, "dataset name")
        if dataset.get("subset") is not None:
            _name(config_file, f"datasets.{name}.subset", dataset["subset"], "subset name")
        if dataset.get("split") is not None:
            _name(config_file, f"datasets.{name}.split", dataset["split"], "split name")
        for design in dataset_designs(config, name):
            _name(config_file, f"datasets.{name}.designs", design_name(design), "design name")


def check_designs(config: Mapping, config_file: str) -> None:
    """Datasets or published data given (published judgments with the texts they judge); embedders
    known (traces need none); designs distinct with 1 <= Np < Nc and K <= Nc."""
    datasets, embedders = config["datasets"], config["embedders"]
    if not config.get("published") and not datasets:
        raise InputError(config_file, "config key datasets", "no dataset configured and no published data given")
    if (config.get("published") or {}).get("judgments") and not config["published"].get("texts"):
        raise InputError(config_file, "config key published.judgments",
                         "judgments need published.texts, the samples_texts.json of the texts they judge")
    if any(not embedders and not dataset.get("run") and dataset["layout"] != TRACES_LAYOUT
           for dataset in datasets.values()):
        raise InputError(config_file, "config key embedders", "datasets are configured but no embedder is registered")
    for name in datasets:
        if datasets[name]["layout"] == TRACES_LAYOUT:
            continue
        for code in dataset_embedders(config, name):
            if code not in embedders:
                raise InputError(
                    config_file,
                    f"config key datasets.{name}.embedders",
                    f"unknown embedder code {code!r}; registered codes: {', '.join(sorted(embedders))}",
                )
        if not dataset_embedders(config, name) and not datasets[name].get("run"):
            raise InputError(config_file, f"config key datasets.{name}.embedders", "no embedder and no run: nothing ranks it")
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

    for code, spec in config["embedders"].items():
        if spec.get("backend") in LEXICAL_BACKENDS:
            bm25_settings(code, spec, config_file)


def input_files(config: Mapping) -> list[tuple[str, str]]:
    """(config key, path) of every input file the config names: datasets, published files, human grades."""
    files = [(f"datasets.{name}.path", dataset["path"]) for name, dataset in config["datasets"].items() if "path" in dataset]
    files += [(f"datasets.{name}.{key}", path) for name, dataset in config["datasets"].items()
              for key in ("paths", "qrels") for path in ([dataset.get(key)] if key == "qrels" else dataset.get(key) or [])
              if path]
    files += [(f"datasets.{name}.run", dataset["run"]) for name, dataset in config["datasets"].items()
              if dataset.get("run")]
    published = config.get("published") or {}
    files += [(f"published.{key}", published[key]) for key in ("graded", "ranked", "texts") if published.get(key)]
    files += [("published.judgments", path) for path in published.get("judgments") or []]
    if config["analysis"].get("human"):
        files.append(("analysis.human", config["analysis"]["human"]))
    return files


def check_dataset_options(config: Mapping, config_file: str) -> None:
    """Each dataset's ``level`` and ``subset`` apply to its layout (``datasets.layouts.check_options``);
    an ``ir_datasets`` dataset has a safe ``ir_datasets_id`` and no ``path``, another layout no
    ``ir_datasets_id``; a ``run`` needs a layout with document ids (``CORPUS_LAYOUTS``)."""
    for name, dataset in config["datasets"].items():
        check_options(config_file, dataset["layout"], level=dataset.get("level"), subset=dataset.get("subset"),
                      key=f"config key datasets.{name}.", split_joined_words=dataset.get("split_joined_words", False))
        if dataset["layout"] == "ir_datasets":
            if "path" in dataset:
                rule = "the ir_datasets layout reads no file: its dataset is named by ir_datasets_id alone"
                raise InputError(config_file, f"config key datasets.{name}.path", rule)
            ir_datasets_layout.check_id(dataset["ir_datasets_id"], config_file, f"config key datasets.{name}.ir_datasets_id")
        elif "ir_datasets_id" in dataset:
            rule = f"applies to the ir_datasets layout only, not to {dataset['layout']!r}"
            raise InputError(config_file, f"config key datasets.{name}.ir_datasets_id", rule)
        if dataset.get("run") and dataset["layout"] not in CORPUS_LAYOUTS:
            rule = f"a run ranks documents by id; layout {dataset['layout']!r} has none (use {' or '.join(CORPUS_LAYOUTS)})"
            raise InputError(config_file, f"config key datasets.{name}.run", rule)


def check_retrieval(config: Mapping, config_file: str) -> None:
    """A corpus-level dataset (``retrieval: corpus``) has a layout with a corpus (``CORPUS_LAYOUTS``) and
    neither ``designs`` nor ``text_words``; a pools dataset takes its K from its designs, not ``K``."""
    for name, dataset in config["datasets"].items():
        key = f"config key datasets.{name}."
        if dataset.get("retrieval", "pools") == "pools":
            if "K" in dataset:
                raise InputError(config_file, f"{key}K", "K of a dataset applies to retrieval: corpus; "
                                 "a pools dataset takes its K from its designs")
            continue
        if dataset["layout"] not in CORPUS_LAYOUTS:
            rule = f"corpus retrieval needs a corpus; layout {dataset['layout']!r} has none (use {' or '.join(CORPUS_LAYOUTS)})"
            raise InputError(config_file, f"{key}retrieval", rule)
        for option, why in (("designs", "a corpus-level dataset has no (Nc, Np) designs: set its K"),
                            ("text_words", "shortening texts applies to pools only")):
            if dataset.get(option) is not None:
                raise InputError(config_file, f"{key}{option}", why)


TRACE_ONLY_OPTIONS = ("paths", "feedback_labels", "qrels", "relevance", "trace_grades")
"""Dataset keys that apply to the traces layout only."""
NOT_FOR_TRACES = ("designs", "embedders", "run", "run_code", "K", "text_words", "queries")
"""Dataset keys that do not apply to traces: their systems ranked and answered already."""


def check_traces(config: Mapping, config_file: str) -> None:
    """A traces dataset (docs/TRACES.md) is not mixed with other datasets nor published files (its
    analysis has no Np); it has none of :data:`NOT_FOR_TRACES` and retrieval ``pools`` (the
    default: it retrieves nothing); ``relevance: umbrela`` needs the ``umbrela`` judgment kind,
    ``relevance: qrels`` a ``qrels`` file; another layout has none of :data:`TRACE_ONLY_OPTIONS`."""
    traces = [name for name, dataset in config["datasets"].items() if dataset["layout"] == TRACES_LAYOUT]
    for name, dataset in config["datasets"].items():
        key = f"config key datasets.{name}."
        if name not in traces:
            for option in TRACE_ONLY_OPTIONS:
                if dataset.get(option) is not None:
                    raise InputError(config_file, f"{key}{option}", "applies to the traces layout only")
            continue
        for option in NOT_FOR_TRACES:
            if dataset.get(option) is not None:
                raise InputError(config_file, f"{key}{option}", "does not apply to traces: their systems ranked "
                                 "and answered already")
        if dataset.get("retrieval", "pools") != "pools":
            raise InputError(config_file, f"{key}retrieval", "does not apply to traces: they retrieve nothing")
        relevance = dataset.get("relevance", "umbrela")
        if relevance == "umbrela" and "umbrela" not in judgment_kinds(config):
            raise InputError(config_file, f"{key}relevance", "relevance umbrela labels the traces' documents with "
                             "UMBRELA: add umbrela to document_judgments.kinds (or give qrels and relevance: qrels)")
        if relevance == "qrels" and not dataset.get("qrels"):
            raise InputError(config_file, f"{key}relevance", "relevance qrels needs a qrels file (datasets.<name>.qrels)")
    if traces and (len(traces) < len(config["datasets"]) or config.get("published")):
        other = next((n for n in config["datasets"] if n not in traces), "published")
        raise InputError(config_file, f"config key datasets.{traces[0]}",
                         f"traces are analysed without Np and cannot share a config with {other!r}: run them "
                         "in a config of their own")


def check_corpus_sizes(config: Mapping, config_file: str) -> None:
    """A corpus-level ``beir`` or ``trec`` dataset's corpus holds at least max(K) documents (each
    query retrieves its top 2 max(K), at least max(K)): its first max(K) records are counted
    (``judged_corpus.has_records``), so a large corpus costs one read of its head. InputError
    naming the dataset's K key (its own, else the top-level one) and the corpus file."""
    for name, dataset in config["datasets"].items():
        if dataset.get("retrieval", "pools") != "corpus" or dataset["layout"] not in ("beir", "trec"):
            continue
        corpus = corpus_file(dataset["layout"], dataset["path"])
        needed = max(dataset.get("K", config["K"]))
        if corpus is None or (found := has_records(corpus, needed)) >= needed:
            continue
        key = f"datasets.{name}.K" if "K" in dataset else "K"
        raise InputError(config_file, f"config key {key}",
                         f"corpus {str(corpus)!r} of dataset {name} holds {found} documents, fewer than K = {needed}: "
                         "a query retrieves at least max(K) documents")


def check_trace_records(config: Mapping) -> None:
    """Every record of every traces dataset's files follows the traces format, and its qrels file
    parses (``datasets.traces.read_trace_records``, ``read_qrels``): the bad records of a dataset
    raised at once, one line ``<file>: line N: <rule>`` each. It reads the files, so the workflow
    runs it in its main process only, after :func:`check_config` (which checks they exist)."""
    for name in trace_datasets(config):
        dataset = config["datasets"][name]
        read_trace_records(trace_files(config, name), dataset.get("feedback_labels"))
        if dataset.get("qrels"):
            read_qrels(dataset["qrels"])


def check_numbered_subsets(config: Mapping, config_file: str) -> None:
    """No two datasets whose layouts number their rows ``<subset>-<n>`` (``beir``, ``trec``,
    ``ir_datasets``) share a subset: their query ids would collide. InputError naming the second
    dataset's ``subset`` key."""
    owner: dict[str, str] = {}
    for name, dataset in config["datasets"].items():
        subset = row_subset(dataset["layout"], dataset.get("subset"))
        if subset is None:
            continue
        if subset in owner:
            rule = (f"datasets {owner[subset]} and {name} would both number their queries {subset}-0, {subset}-1, ...: "
                    f"give {name} a subset of its own (its ids become <subset>-<n>; a safe name)")
            raise InputError(config_file, f"config key datasets.{name}.subset", rule)
        owner[subset] = name


def check_beir_folders(config: Mapping, config_file: str) -> None:
    """A ``beir`` dataset's ``path`` that is a folder holds ``qrels/<split>.tsv`` (``split`` default
    ``test``: ``judged_corpus.beir_qrels``); ``split`` applies to such a folder only."""
    for name, dataset in config["datasets"].items():
        split, path = dataset.get("split"), dataset.get("path")
        if split is not None and (dataset["layout"] != "beir" or not Path(path).is_dir()):
            rule = "split applies to a beir dataset whose path is its folder (<folder>/qrels/<split>.tsv)"
            raise InputError(config_file, f"config key datasets.{name}.split", rule)
        if dataset["layout"] == "beir" and Path(path).is_dir():
            try:
                beir_qrels(path, split)
            except InputError as error:
                raise InputError(config_file, f"config key datasets.{name}.path",
                                 f"BEIR folder {path!r}: {error.rule}") from None


def check_input_files(config: Mapping, config_file: str) -> None:
    """Every input file named by the config is an existing regular file (a BEIR folder: its qrels
    file, :func:`check_beir_folders`)."""
    check_beir_folders(config, config_file)
    folders = {f"datasets.{name}.path" for name, dataset in config["datasets"].items()
               if dataset["layout"] == "beir" and Path(dataset["path"]).is_dir()}
    for key, path in input_files(config):
        if key not in folders and not Path(path).is_file():
            raise InputError(config_file, f"config key {key}", f"file {path!r} not found (expected a readable regular file)")


def check_ir_datasets(config: Mapping, config_file: str) -> None:
    """Every ``ir_datasets`` dataset can be read: registered with docs, queries and qrels, and in the
    package's cache unless ``models.allow_downloads`` (``ir_datasets_layout.check_available``, no network)."""
    for name, dataset in config["datasets"].items():
        if dataset["layout"] == "ir_datasets":
            ir_datasets_layout.check_available(dataset["ir_datasets_id"], allow_downloads=config["models"]["allow_downloads"],
                                               path=config_file, record=f"config key datasets.{name}.ir_datasets_id")


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
    if traces_mode(config):
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
    """No dataset name or embedder code that Snakemake would refuse as a wildcard value: ``is_periodic``
    is Snakemake's test (a value ending in a substring repeated 20 times or more)."""
    for key in ("datasets", "embedders"):
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
